"""bounded: a program's output read with a limit and a deadline, its stderr's end kept."""

from __future__ import annotations

import sys
import time

from nodeprov.util.bounded import STDERR_TAIL, run_bounded


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_output_within_the_limit_comes_back_whole_with_the_exit_code() -> None:
    done = run_bounded(python("import sys; print('x' * 1000); sys.stderr.write('e' * 9000); "
                              "sys.exit(3)"), limit=2000, timeout=30)
    assert (done.returncode, done.stdout, done.over_limit, done.timed_out) == (
        3, b"x" * 1000 + b"\n", False, False)
    assert done.stderr_tail == b"e" * STDERR_TAIL


def test_output_without_end_stops_at_the_limit() -> None:
    started = time.monotonic()
    done = run_bounded(["yes"], limit=1 << 20, timeout=30)
    assert done.over_limit and done.returncode is None and len(done.stdout) == 1 << 20
    assert time.monotonic() - started < 10


def test_a_program_that_never_ends_stops_at_the_deadline() -> None:
    done = run_bounded(["sleep", "30"], limit=100, timeout=0.5)
    assert done.timed_out and done.returncode is None
