"""The ``nodeprov`` console script and ``python -m nodeprov``: the Typer app (``nodeprov.cli``)
with three ends of the process made right, which click and rich alone get wrong::

    nodeprov --list-hosts inventory.yaml | head -1   # exit 141, not 1 ("a host failed")
    COLUMNS=0 nodeprov --help                        # the help, not nothing
    Ctrl-C while nodeprov still starts               # exit 130, not an import traceback
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import sys
from collections.abc import MutableMapping

from nodeprov.errors import EXIT_HOST_FAILED, EXIT_INTERRUPTED, EXIT_OUTPUT_CLOSED


def main() -> None:
    """Run the command line named in ``sys.argv`` and exit with its code."""
    _forget_zero_sizes(os.environ)
    # Rich and click both end with exit 1 on the EPIPE of a write after stdout's reader closed
    # the pipe, and rich puts /dev/null on fd 1 first; this copy still sees the pipe.
    stdout = _copy_of_stdout()
    try:
        from nodeprov.cli import app  # its imports take a moment: Ctrl-C may land in them
        app()
    except KeyboardInterrupt:
        raise SystemExit(EXIT_INTERRUPTED) from None
    except SystemExit as end:
        if (end.code == EXIT_HOST_FAILED and _ended_by_a_closed_pipe(end)
                and stdout is not None and _reader_went_away(stdout)):
            raise SystemExit(EXIT_OUTPUT_CLOSED) from None
        raise
    finally:
        if stdout is not None:
            os.close(stdout)


def _copy_of_stdout() -> int | None:
    with contextlib.suppress(OSError, ValueError, AttributeError):
        return os.dup(sys.__stdout__.fileno())  # type: ignore[union-attr]
    return None


def _ended_by_a_closed_pipe(end: BaseException) -> bool:
    """Whether ``end`` was raised while handling a write's EPIPE, as rich and click raise their
    exit 1: a host that failed while the reader had gone (``| grep -q``) stays exit 1.

    >>> try:
    ...     try:
    ...         raise BrokenPipeError(errno.EPIPE, "Broken pipe")
    ...     except OSError:
    ...         raise SystemExit(1)
    ... except SystemExit as end:
    ...     _ended_by_a_closed_pipe(end)
    True
    >>> _ended_by_a_closed_pipe(SystemExit(1))
    False
    """
    cause = end.__context__
    while cause is not None:
        if isinstance(cause, OSError) and cause.errno == errno.EPIPE:
            return True
        cause = cause.__context__
    return False


def _reader_went_away(fd: int) -> bool:
    """Whether ``fd`` is a pipe or socket whose reader has closed it.

    >>> read_end, write_end = os.pipe()
    >>> _reader_went_away(write_end)
    False
    >>> os.close(read_end)
    >>> _reader_went_away(write_end)
    True
    >>> os.close(write_end)
    """
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def _forget_zero_sizes(environ: MutableMapping[str, str]) -> None:
    """Drop a COLUMNS or LINES of 0, which rich takes as a terminal that shows nothing; rich
    already passes over values that are not digits.

    >>> environ = {"COLUMNS": "0", "LINES": "40"}
    >>> _forget_zero_sizes(environ)
    >>> environ
    {'LINES': '40'}
    """
    for name in ("COLUMNS", "LINES"):
        value = environ.get(name, "")
        if value.isdigit() and int(value) == 0:
            del environ[name]


if __name__ == "__main__":
    main()
