"""nodeside/written.py run for real on this machine: it counts the bytes of files created or
changed since it started, each inode once, under folders that may come and go, and prints a
last count at EOF on its stdin."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from nodeprov.wheels.written import SCRIPT

TOKEN = "nodeprov-written-test"


@contextmanager
def start(*folders: Path, lifetime: float = 60) -> Iterator[subprocess.Popen[str]]:
    with subprocess.Popen(["python3", "-I", "-c", SCRIPT, TOKEN, f"{lifetime:g}",
                           *map(str, folders)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as process:
        assert process.stderr is not None and process.stdout is not None
        assert process.stderr.readline() == f"{TOKEN}\n"  # it runs: sudo, if any, is done
        assert process.stdout.readline() == "0\n"  # nothing written since
        yield process


def counts_after_eof(process: subprocess.Popen[str]) -> list[int]:
    out, err = process.communicate(timeout=30)
    assert process.returncode == 0 and err == ""
    return [int(line) for line in out.split()]


def test_new_and_changed_files_count_once_per_inode_old_ones_and_links_do_not(
        tmp_path: Path) -> None:
    venv, cache, tmp = tmp_path / "venv", tmp_path / "venv.uv-cache", tmp_path / "venv.pip-tmp"
    venv.mkdir()
    (venv / "old.py").write_bytes(b"o" * 5000)  # there before: not the install's
    time.sleep(0.05)  # the kernel's file times are coarser than its clock
    with start(venv, cache, tmp) as process:  # the cache and pip's folder come later
        cache.mkdir()
        (cache / "torch.so").write_bytes(b"t" * 3_000_000)
        os.link(cache / "torch.so", venv / "torch.so")  # uv's hard link: one file, once
        (venv / "lib").mkdir()
        (venv / "lib" / "six.py").write_bytes(b"s" * 1000)
        (venv / "link").symlink_to("/usr")  # not followed
        assert counts_after_eof(process)[-1] == 3_001_000


def test_folders_that_go_away_count_what_is_left_and_it_ends_by_itself(tmp_path: Path) -> None:
    tmp = tmp_path / "pip-tmp"
    with start(tmp, tmp_path / "never", lifetime=5) as process:
        tmp.mkdir()
        (tmp / "torch.whl").write_bytes(b"w" * 200_000)
        assert process.stdout is not None
        assert process.stdout.readline() == "200000\n"  # its next count, a second later
        (tmp / "torch.whl").unlink()  # pip removes the wheel it installed
        assert process.stdout.readline() == "0\n"
        started = time.monotonic()
        process.wait(timeout=30)  # its lifetime, without EOF
        assert process.returncode == 0 and time.monotonic() - started < 10


def test_a_closed_channel_ends_it_quietly(tmp_path: Path) -> None:
    with start(tmp_path) as process:
        assert process.stdout is not None and process.stdin is not None
        process.stdout.close()  # nodeprov went away: its next print fails
        process.stdin.close()
        process.wait(timeout=30)
        assert process.returncode == 0 and process.stderr is not None
        assert process.stderr.read() == ""
