"""Report files (``--json PATH``, ``--html PATH``): checked before the run, written after it
atomically, private (0600), never through a symlink.

A report names every node and what changed there: it is for the admin alone, and a path that
cannot be written must stop the command before any node changes, not after the whole run::

    target = checked_target("report.json", option="--json")   # InputError (exit 2) if not
    ...                                                        # the run
    write_private(target, text)                                # ReportNotWritten if it fails
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from nodeprov.errors import InputError, NodeprovError
from nodeprov.util.validate import printable

STDOUT = "-"


class ReportNotWritten(NodeprovError):
    """The report could not be written after the run (the disk filled up, the folder went)."""


def checked_target(path: str, *, option: str) -> str:
    """``path`` if a report can be written there (``-`` is stdout): its folder exists and takes
    a new file, and it is not a symlink, a folder or a device. InputError names ``option``."""
    if path == STDOUT:
        return path
    if not path or "\n" in path or path != printable(path):  # misread in every message after
        shown = printable(path).replace("\n", "\\n")
        raise InputError(f"'{shown}' is no file name for a report: "
                         "give a path without control characters, or - for stdout", field=option)
    target = Path(path)
    try:
        found = os.lstat(target)
    except FileNotFoundError:
        found = None
    except OSError as error:
        raise InputError(f"{path}: {error.strerror}", field=option) from None
    if found is not None and stat.S_ISLNK(found.st_mode):
        raise InputError(f"{path} is a symlink; give the report's own path (a symlink could "
                         "send it over another file)", field=option)
    if found is not None and not stat.S_ISREG(found.st_mode):
        raise InputError(f"{path} is not a regular file; give a file path", field=option)
    try:
        _temporary(target).close()
    except OSError as error:
        raise InputError(f"cannot write {path}: {error.strerror}; give a path in a writable "
                         "folder", field=option) from None
    return path


def write_private(path: str, text: str) -> None:
    """Write ``text`` to ``path`` as a new file (mode 0600) renamed over the old one: a reader
    never sees half a report, and a symlink at ``path`` is replaced, not followed."""
    target = Path(path)
    temporary = ""
    try:
        with _temporary(target, delete=False) as written:
            temporary = written.name
            written.write(text.encode())
            written.flush()
            os.fsync(written.fileno())
        os.replace(temporary, target)
    except OSError as error:
        if temporary:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        raise ReportNotWritten(f"the report could not be written to {path}: "
                               f"{error.strerror or error}") from None


def _temporary(target: Path, delete: bool = True) -> IO[bytes]:
    """A new private file (0600, made with O_EXCL) beside ``target``: the rename stays on one
    file system."""
    return tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}.",
                                       suffix=".tmp", delete=delete)


def refuse_inputs(outputs: Mapping[str, str | None],
                  inputs: Sequence[tuple[str, Path]]) -> None:
    """InputError (exit 2) naming both paths when an output would overwrite one of the
    command's ``inputs`` (the same file, or a file inside an input folder: the next read
    would take the report for input), when two outputs are one file, or when two go to
    stdout. ``outputs``: option to path (None: not asked for); ``inputs``: (what, path).

        refuse_inputs({"--json": "hosts.yaml"}, [("inventory", Path("hosts.yaml"))])
        # InputError: --json: hosts.yaml is the inventory hosts.yaml; ...
    """
    given = {option: path for option, path in outputs.items() if path}
    to_stdout = [option for option, path in given.items() if path == STDOUT]
    if len(to_stdout) > 1:
        raise InputError(f"{' and '.join(to_stdout)} both write to stdout ('-'); give all but "
                         "one of them a file", field=to_stdout[-1])
    seen: dict[Path, str] = {}
    for option, path in given.items():
        if path == STDOUT:
            continue
        written = Path(path).resolve()
        if written in seen:
            raise InputError(f"{path} is also {seen[written]}'s file; give each report its own "
                             "path", field=option)
        seen[written] = option
        for what, source in inputs:
            read = source.resolve()
            if written == read or _same_file(written, read):
                raise InputError(f"{path} is the {what} {source}: the report would overwrite "
                                 "what this command reads; give the report another path",
                                 field=option)
            if read in written.parents:
                raise InputError(f"{path} is inside the {what} {source}, which is read whole: "
                                 "the next run would read the report as part of it; give the "
                                 "report another path", field=option)


def _same_file(written: Path, read: Path) -> bool:
    """Whether the two are one file by two names (a hard link)."""
    try:
        return os.path.samefile(written, read)
    except OSError:
        return False
