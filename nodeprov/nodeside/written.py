"""The node side of an install's progress: how many bytes it has written so far.

nodeprov runs this file's text with the node's python3 (standard library only, any python3 from
3.8) beside an install or a download from an index, on a channel of its own::

    python3 -I -c WRITTEN TOKEN LIFETIME /opt/venv /opt/venv.uv-cache /opt/venv.pip-tmp
    0
    52428800
    ...

It says TOKEN on stderr (sudo is done), then prints on stdout, about every second, the bytes of
the regular files under those folders created or changed since it started (their inode's ctime;
a hard link uv makes changes it too), each file counted once however many links it has: what
pip or uv has downloaded, unpacked and installed. A folder that is missing counts nothing (it
may come later). It stops at EOF on stdin (the install ended: it prints a last count), when
stdout is closed, or after LIFETIME seconds. A walk that takes long waits longer before the
next (ten times as long), so the count takes at most a tenth of one core: a venv with torch
(29,000 files) took 0.6 s a walk on a loaded 2-core machine, so the bar moves every 6 s then.
"""

from __future__ import annotations

import os
import select
import sys
import time

INTERVAL = 1.0  # seconds between counts, at least
BUSY = 10  # the pause after a count is at least this many times the count's own time


def written(folders: list[str], since: int) -> int:
    """Bytes of the regular files under ``folders`` whose inode changed at ``since`` (ns) or
    later, each inode once; symbolic links are not followed."""
    seen = set()
    total = 0
    pending = list(folders)
    while pending:
        try:
            entries = os.scandir(pending.pop())
        except OSError:  # not there (yet), or gone: pip's and uv's folders come and go
            continue
        with entries:
            for entry in entries:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(entry.path)
                        continue
                    if not entry.is_file(follow_symlinks=False):
                        continue
                    status = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                inode = (status.st_dev, status.st_ino)
                if status.st_ctime_ns >= since and inode not in seen:
                    seen.add(inode)
                    total += status.st_size
    return total


def main(token: str, lifetime: float, folders: list[str]) -> None:
    since = time.time_ns()
    ends = time.monotonic() + lifetime
    sys.stderr.write(token + "\n")
    sys.stderr.flush()
    while True:
        began = time.monotonic()
        print(written(folders, since), flush=True)
        pause = max(INTERVAL, BUSY * (time.monotonic() - began))
        if time.monotonic() + pause > ends:
            return
        ready, _, _ = select.select([sys.stdin], [], [], pause)
        if ready and not os.read(sys.stdin.fileno(), 4096):  # EOF: the install ended
            print(written(folders, since), flush=True)
            return


if __name__ == "__main__":
    try:
        main(sys.argv[1], float(sys.argv[2]), sys.argv[3:])
    except BrokenPipeError:  # nodeprov stopped listening: nothing to say, quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
