"""Running a program of this machine whose output is read with a limit: a dynamic inventory
script printing gigabytes ends as one line, not as MemoryError.

    done = run_bounded(["./inventory.py", "--list"], limit=4 << 20, timeout=120)
    done.stdout, done.stderr_tail, done.over_limit, done.timed_out, done.returncode
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass

STDERR_TAIL = 4096  # bytes of stderr kept: the end says why it failed


@dataclass(frozen=True)
class Bounded:
    returncode: int | None  # None when it was killed (over the limit or the timeout)
    stdout: bytes
    stderr_tail: bytes
    over_limit: bool
    timed_out: bool


def run_bounded(argv: Sequence[str], *, limit: int, timeout: float) -> Bounded:
    """Run ``argv`` (no stdin), keeping at most ``limit`` bytes of stdout and the last
    STDERR_TAIL of stderr; killed once over the limit or past ``timeout`` s. OSError (no such
    program) propagates."""
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    out, err = bytearray(), bytearray()
    deadline = time.monotonic() + timeout
    over = timed_out = False
    with selectors.DefaultSelector() as selector:
        for stream, kept in ((process.stdout, out), (process.stderr, err)):
            assert stream is not None  # PIPE
            selector.register(stream, selectors.EVENT_READ, kept)
        while selector.get_map() and not (over or timed_out):
            left = deadline - time.monotonic()
            timed_out = left <= 0
            for key, _ in selector.select(max(left, 0)):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                key.data.extend(chunk)
                if key.data is err:
                    del err[:-STDERR_TAIL]
                over = len(out) > limit
    if over or timed_out:
        process.kill()
    returncode = process.wait()
    for stream in (process.stdout, process.stderr):
        if stream is not None:
            stream.close()
    return Bounded(None if over or timed_out else returncode, bytes(out[:limit]),
                   bytes(err), over, timed_out)
