"""The node side of ``--sync`` (syncnode.py), run on this machine as a node runs it (python3 -I,
as root here, as it runs under ``run_as_root`` or a root login): nothing written through a
link, nothing written where someone else could plant a file the job would import, setuid and
setgid bits dropped, nothing renamed into place unless every file arrived."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import pytest

SCRIPT = resources.files("nodeprov.nodeside").joinpath("syncnode.py").read_text()
NOBODY = 65534

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="as root, as a node runs it with "
                                "run_as_root: chown to another user")


def node(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[str]:
    done = subprocess.run([sys.executable, "-I", "-c", SCRIPT, *args], input=stdin,
                          capture_output=True, timeout=60, check=False)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.decode(),
                                       done.stderr.decode())


def frames(files: Sequence[tuple[str, bytes, int]]) -> bytes:
    """What nodeprov sends: per file a JSON line [path, size, mode] and its bytes, then an
    empty line."""
    return b"".join(json.dumps([path, len(data), mode]).encode() + b"\n" + data
                    for path, data, mode in files) + b"\n"


def receive(root: Path, files: Sequence[tuple[str, bytes, int]], *,
            cut: int = 0) -> subprocess.CompletedProcess[str]:
    sent = frames(files)
    return node("receive", str(root), "TOKEN", stdin=sent[:len(sent) - cut])


@pytest.fixture
def root(tmp_path: Path) -> Path:
    tmp_path.chmod(0o755)
    return tmp_path / "train"


def test_files_arrive_with_their_modes_less_setuid_and_setgid(root: Path) -> None:
    done = receive(root, [("train.py", b"x = 1\n", 0o644), ("bin/tool", b"#!/bin/sh\n", 0o6755),
                          ("conf/a.yaml", b"a: 1\n", 0o1640)])
    assert done.returncode == 0, done.stderr
    assert done.stderr == "TOKEN\n" and json.loads(done.stdout) == {"received": 3}
    modes = {path: stat.S_IMODE((root / path).stat().st_mode)
             for path in ("train.py", "bin/tool", "conf/a.yaml")}
    assert modes == {"train.py": 0o644, "bin/tool": 0o755, "conf/a.yaml": 0o640}
    assert json.loads(node("manifest", str(root)).stdout)["bin/tool"][0] == 10
    assert not list(root.rglob(".nodeprov-*"))


def test_a_planted_link_is_never_followed_and_nothing_is_renamed(root: Path,
                                                                 tmp_path: Path) -> None:
    victim = tmp_path / "cron.d"
    victim.mkdir()
    root.mkdir()
    (root / "conf").symlink_to(victim)  # as the issue's: conf -> /etc/cron.d
    done = receive(root, [("a.py", b"new\n", 0o644), ("conf/evil", b"* * * * * root x\n", 0o644)])
    assert done.returncode == 3
    assert done.stderr.splitlines()[-1] == (
        f"{root}/conf is a symbolic link on the node; nodeprov writes through none (give the "
        "real path, or remove the link)")
    assert list(victim.iterdir()) == [] and sorted(p.name for p in root.iterdir()) == ["conf"]


def test_a_link_on_the_way_to_the_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "via").symlink_to(tmp_path / "real")
    done = receive(tmp_path / "via" / "train", [("a.py", b"x\n", 0o644)])
    assert done.returncode == 3 and "via is a symbolic link on the node" in done.stderr
    assert list((tmp_path / "real").iterdir()) == []
    assert node("manifest", str(tmp_path / "via" / "train")).returncode == 3


def test_a_folder_or_file_of_another_user_is_refused_before_anything_is_written(
        root: Path) -> None:
    root.mkdir()
    (root / "torch.py").write_text("print('planted')\n")
    os.chown(root / "torch.py", NOBODY, NOBODY)
    listed = node("manifest", str(root))
    assert listed.returncode == 3
    assert listed.stderr.strip() == (
        f"{root}/torch.py belongs to nobody, not to the job's user or root: someone else "
        "could have put a file there that the job would run")
    os.chown(root / "torch.py", 0, 0)
    os.chown(root, NOBODY, NOBODY)
    done = receive(root, [("a.py", b"x\n", 0o644)])
    assert done.returncode == 3 and f"{root} belongs to nobody" in done.stderr
    assert not (root / "a.py").exists()


@pytest.mark.parametrize(("mode", "who"), [(0o777, "every user"), (0o1777, "every user"),
                                           (0o775, "its group")])
def test_a_folder_others_may_write_is_refused(root: Path, mode: int, who: str) -> None:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg").chmod(mode)  # a job as root imports what its group could plant
    done = receive(root, [("pkg/m.py", b"x\n", 0o644)])
    assert done.returncode == 3
    assert f"{root}/pkg is writable by {who} (mode {mode:o})" in done.stderr
    assert node("manifest", str(root)).returncode == 3


def test_a_sticky_parent_others_write_is_fine_but_not_the_folder_itself(tmp_path: Path) -> None:
    shared = tmp_path / "tmp"
    shared.mkdir()
    shared.chmod(0o1777)  # as /tmp: nobody else can rename or remove our folder in it
    assert receive(shared / "train", [("a.py", b"x\n", 0o644)]).returncode == 0
    assert receive(shared, [("a.py", b"x\n", 0o644)]).returncode == 3


@pytest.mark.parametrize("name", ["../escape.py", "/etc/passwd", "a/../../b", "./a", "a//b"])
def test_a_path_that_is_not_plain_and_relative_renames_nothing(root: Path, name: str) -> None:
    done = receive(root, [("fine.py", b"x\n", 0o644), (name, b"x\n", 0o644)])
    assert done.returncode == 3 and f"refused {name!r}: not a plain relative path" in done.stderr
    assert not (root / "fine.py").exists() and not list(root.rglob(".nodeprov-*"))


def test_a_cut_stream_renames_nothing_and_leaves_no_temporary_file(root: Path) -> None:
    root.mkdir()
    (root / "a.py").write_text("old\n")
    done = receive(root, [("a.py", b"new\n", 0o644), ("big.bin", b"x" * 100_000, 0o644)],
                   cut=5_000)
    assert done.returncode == 3 and "the stream ended inside big.bin" in done.stderr
    assert (root / "a.py").read_text() == "old\n" and sorted(os.listdir(root)) == ["a.py"]


def test_the_manifest_lists_regular_files_keeps_own_links_and_skips_git_and_caches(
        root: Path) -> None:
    (root / ".git").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref\n")
    (root / "pkg" / "__pycache__").mkdir(parents=True)
    (root / "pkg" / "__pycache__" / "m.pyc").write_text("x")
    (root / "pkg" / "m.py").write_text("m\n")
    (root / "latest.ckpt").symlink_to("/etc/hostname")  # the user's own: kept, not followed
    assert sorted(json.loads(node("manifest", str(root)).stdout)) == ["pkg/m.py"]
    os.chown(root / "pkg" / "__pycache__" / "m.pyc", NOBODY, NOBODY)  # a planted bytecode
    assert node("manifest", str(root)).returncode == 3
    assert json.loads(node("manifest", str(root / "missing")).stdout) == {}
