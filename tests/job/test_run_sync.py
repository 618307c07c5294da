"""``--sync``: which files to send, and the node-side script run on this machine (the node's
side of both round trips): a first sync sends everything, a second nothing, an edit one file."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import subprocess
import sys
import tarfile
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from nodeprov.errors import CommandFailed
from nodeprov.inventory import Host
from nodeprov.job.sync import local_manifest, pack, plan_sync, sync_node
from nodeprov.remote.session import Result

SCRIPT = resources.files("nodeprov.nodeside").joinpath("syncnode.py").read_text()


def tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_plan_sends_missing_and_changed_files_only() -> None:
    local = {"a.py": [3, "aaa"], "conf/b.yaml": [2, "bbb"], "c.py": [5, "ccc"]}
    remote = {"a.py": [3, "aaa"], "conf/b.yaml": [2, "xxx"], "old.py": [1, "ooo"]}
    assert plan_sync(local, remote) == ["c.py", "conf/b.yaml"]
    assert plan_sync(local, local) == []
    assert plan_sync({"a.py": [4, "aaa"]}, {"a.py": [3, "aaa"]}) == ["a.py"]  # size alone


def test_the_manifest_lists_sizes_and_hashes_and_skips_git_caches_and_links(
        tmp_path: Path) -> None:
    root = tree(tmp_path, {"train.py": "print(1)\n", "conf/x.yaml": "a: 1\n",
                           ".git/HEAD": "ref\n", "pkg/__pycache__/m.pyc": "x"})
    (root / "link.py").symlink_to(root / "train.py")
    assert local_manifest(root) == {
        "train.py": [9, hashlib.sha256(b"print(1)\n").hexdigest()],
        "conf/x.yaml": [5, hashlib.sha256(b"a: 1\n").hexdigest()]}


def node(command: str, root: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """The node-side script as a node runs it: python3 -c with its text."""
    return subprocess.run([sys.executable, "-c", SCRIPT, command, str(root)], input=stdin,
                          capture_output=True, text=True, timeout=60, check=False)


def test_a_second_sync_sends_nothing_and_an_edit_sends_one_file(tmp_path: Path) -> None:
    local = tree(tmp_path / "local", {"train.py": "x = 1\n", "conf/b.yaml": "b: 2\n"})
    (local / "run.sh").write_text("#!/bin/sh\n")
    (local / "run.sh").chmod(0o755)
    target = tmp_path / "node"  # stands for the same path on a node
    assert json.loads(node("manifest", target).stdout) == {}  # not there yet
    first = plan_sync(local_manifest(local), json.loads(node("manifest", target).stdout))
    assert first == ["conf/b.yaml", "run.sh", "train.py"]
    received = node("receive", target, pack(local, first))
    assert received.returncode == 0, received.stderr
    assert json.loads(received.stdout) == {"received": 3}
    assert (target / "conf/b.yaml").read_text() == "b: 2\n"
    assert (target / "run.sh").stat().st_mode & 0o777 == 0o755
    assert plan_sync(local_manifest(local), json.loads(node("manifest", target).stdout)) == []
    (local / "train.py").write_text("x = 2\n")
    assert plan_sync(local_manifest(local), json.loads(node("manifest", target).stdout)) == [
        "train.py"]
    assert not list(target.rglob(".nodeprov.*"))  # no temporary file left


@pytest.mark.parametrize("name", ["../escape.py", "/etc/passwd", "a/../../b"])
def test_receive_refuses_members_outside_the_directory_before_writing(
        tmp_path: Path, name: str) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for member_name in ("fine.py", name):
            info = tarfile.TarInfo(member_name)
            info.size = 2
            archive.addfile(info, io.BytesIO(b"x\n"))
    target = tmp_path / "node"
    refused = node("receive", target, base64.b64encode(buffer.getvalue()).decode())
    assert refused.returncode != 0 and "refused tar member" in refused.stderr
    assert not (target / "fine.py").exists() and not (tmp_path / "escape.py").exists()


class FakeSession:
    """Runs the node-side script on this machine, with ``node_root`` standing for the synced
    path on the node, and records each round trip."""

    def __init__(self, node_root: Path | None = None) -> None:
        self.host = Host("node1", "10.0.0.11", "10.0.0.11")
        self.node_root = node_root
        self.commands: list[str] = []

    def run(self, argv: Sequence[str], *, stdin: str | None = None, **_: Any) -> Result:
        assert list(argv[:2]) == ["python3", "-c"] and argv[2] == SCRIPT
        self.commands.append(argv[3])
        done = node(argv[3], self.node_root or Path(argv[4]), stdin)
        return Result(done.stdout, done.stderr, done.returncode)


def test_sync_node_takes_two_round_trips_then_one(tmp_path: Path) -> None:
    root = tree(tmp_path / "code", {"train.py": "x = 1\n", "lib/util.py": "y = 2\n"})
    session = FakeSession(tmp_path / "node")
    assert sync_node(session, root, local_manifest(root)) == (  # type: ignore[arg-type]
        "lib/util.py", "train.py")
    assert session.commands == ["manifest", "receive"]
    assert (tmp_path / "node/lib/util.py").read_text() == "y = 2\n"
    assert sync_node(session, root, local_manifest(root)) == ()  # type: ignore[arg-type]
    assert session.commands == ["manifest", "receive", "manifest"]


def test_a_node_without_python_fails_the_sync_with_the_nodes_words(tmp_path: Path) -> None:
    class NoPython(FakeSession):
        def run(self, argv: Sequence[str], **_: Any) -> Result:
            return Result("", "sh: 1: python3: not found", 127)

    with pytest.raises(CommandFailed, match=r"node1: sync: .* exited 127: .*python3: not found"):
        sync_node(NoPython(), tmp_path, {"a.py": [1, "x"]})  # type: ignore[arg-type]
