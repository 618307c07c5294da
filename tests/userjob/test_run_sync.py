"""``--sync`` on this machine's side: which files to send, the stream that carries them, and
``sync_nodes`` against fake nodes that run the node-side script here (the node's side of both
round trips): a first sync sends everything, a second nothing, an edit one file; the stream is
framed once for every node that needs the same files; Ctrl-C stops the transfers. What the node
refuses: tests/nodeside/test_syncnode.py."""

from __future__ import annotations

import hashlib
import io
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from nodeprov.errors import CommandFailed, HostError
from nodeprov.inventory import Host
from nodeprov.remote.channel import Terms
from nodeprov.remote.session import Result
from nodeprov.userjob import sync
from nodeprov.userjob.sync import Synced, frame, local_manifest, plan_sync, summary, sync_nodes

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


def test_the_stream_is_a_json_line_and_the_bytes_per_file_then_an_empty_line(
        tmp_path: Path) -> None:
    root = tree(tmp_path, {"a.py": "x = 1\n", "conf/b.bin": ""})
    (root / "a.py").chmod(0o4755)
    framed = io.BytesIO()
    size = frame(root, ["a.py", "conf/b.bin"], framed)
    assert framed.getvalue() == b'["a.py", 6, 2541]\nx = 1\n["conf/b.bin", 0, 420]\n\n'
    assert size == len(framed.getvalue())  # the mode goes as it is: the node drops setuid


class FakeNode:
    """Runs the node-side script on this machine, as a node runs it, with ``root`` standing for
    the synced path on the node; records each round trip and what came on stdin."""

    def __init__(self, root: Path, *, fail: str = "") -> None:
        self.host = Host("node1", "10.0.0.11", "10.0.0.11")
        self.root, self.fail = root, fail
        self.commands: list[str] = []
        self.logins: list[bool] = []
        self.received = 0

    def _argv(self, argv: Sequence[str]) -> list[str]:
        assert list(argv[:4]) == ["python3", "-I", "-c", SCRIPT], argv[:3]
        self.commands.append(argv[4])
        return [sys.executable, "-I", "-c", SCRIPT, argv[4], str(self.root), *argv[6:]]

    def run(self, argv: Sequence[str], *, as_login: bool = False, **_: Any) -> Result:
        self.logins.append(as_login)
        if self.fail:
            return Result("", self.fail, 127)
        done = subprocess.run(self._argv(argv), capture_output=True, text=True, timeout=60,
                              check=False)
        return Result(done.stdout, done.stderr, done.returncode)

    def converse(self, argv: Sequence[str], token: str, terms: Terms, *,
                 as_login: bool = False, **_: Any) -> Result:
        self.logins.append(as_login)
        with subprocess.Popen(self._argv(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) as node:
            assert node.stdin and node.stdout and node.stderr
            assert node.stderr.readline() == f"{token}\n".encode()  # then stdin is its own
            assert terms.send is not None
            try:
                terms.send(self._counted(node.stdin.write))
            finally:
                node.stdin.close()
            out, err = node.stdout.read(), node.stderr.read()
            return Result(out.decode(), err.decode(), node.wait(timeout=60))

    def _counted(self, write: Callable[[bytes], object]) -> Callable[[bytes], None]:
        def counted(block: bytes) -> None:
            self.received += len(block)
            write(block)
        return counted


class Seen:
    """A progress reporter that keeps what it was told."""

    def __init__(self) -> None:
        self.advanced: list[tuple[str, int, int]] = []
        self.ended: list[tuple[str, bool]] = []
        self.closed: list[str] = []

    def advance(self, node: str, done: int, total: int) -> None:
        self.advanced.append((node, done, total))

    def end(self, node: str, failed: bool) -> None:
        self.ended.append((node, failed))

    def close(self, summary: str) -> None:
        self.closed.append(summary)


def sync_to(nodes: dict[str, FakeNode], root: Path, progress: Seen | None = None,
            stop: threading.Event | None = None) -> dict[str, Synced | Exception]:
    return sync_nodes(nodes, root, as_login=dict.fromkeys(nodes, True),  # type: ignore[arg-type]
                      stop=stop or threading.Event(), progress=progress)


def test_a_second_sync_sends_nothing_and_an_edit_sends_one_file(tmp_path: Path) -> None:
    root = tree(tmp_path / "code", {"train.py": "x = 1\n", "lib/util.py": "y = 2\n"})
    node = FakeNode(tmp_path / "node")
    seen = Seen()
    done = sync_to({"node1": node}, root, seen)["node1"]
    assert isinstance(done, Synced) and done.files == 2 and done.bytes == node.received > 12
    assert node.commands == ["manifest", "receive"] and node.logins == [True, True]
    assert (tmp_path / "node/lib/util.py").read_text() == "y = 2\n"
    assert seen.advanced[-1] == ("node1", done.bytes, done.bytes)
    assert seen.ended == [("node1", False)]
    assert summary({"node1": done}) == (
        f"sync: 2 files ({done.bytes / (1 << 20):.1f} MB) to 1 of 1 nodes in "
        f"{done.seconds:.1f} s")
    unchanged = sync_to({"node1": node}, root)["node1"]
    assert isinstance(unchanged, Synced) and (unchanged.files, unchanged.bytes) == (0, 0)
    assert unchanged.seconds <= 5
    assert node.commands == ["manifest", "receive", "manifest"]
    (root / "train.py").write_text("x = 2\n")
    again = sync_to({"node1": node}, root)["node1"]
    assert isinstance(again, Synced) and again.files == 1
    assert (tmp_path / "node/train.py").read_text() == "x = 2\n"


def test_the_files_are_framed_once_for_every_node_that_needs_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tree(tmp_path / "code", {f"m{i}.py": f"v = {i}\n" for i in range(20)})
    framed: list[Sequence[str]] = []
    real_frame = sync.frame

    def counting(root: Path, paths: Sequence[str], into: Any) -> int:
        framed.append(paths)
        return real_frame(root, paths, into)

    monkeypatch.setattr(sync, "frame", counting)
    nodes = {f"node{i}": FakeNode(tmp_path / f"node{i}") for i in range(1, 5)}
    tree(tmp_path / "node4", {"m0.py": "v = 0\n"})  # node4 has one file already
    done = sync_to(nodes, root)
    assert [len(paths) for paths in framed] == [20, 19]  # one stream per distinct set
    assert {name: each.files for name, each in done.items()  # type: ignore[union-attr]
            } == {"node1": 20, "node2": 20, "node3": 20, "node4": 19}
    assert all(len(list((tmp_path / f"node{i}").glob("*.py"))) == 20 for i in range(1, 5))


def test_ctrl_c_stops_the_transfer_and_the_node_keeps_what_it_had(tmp_path: Path) -> None:
    root = tree(tmp_path / "code", {"big.bin": "x" * (3 << 20), "a.py": "new\n"})
    tree(tmp_path / "node", {"a.py": "old\n"})
    stop = threading.Event()

    class Interrupted(Seen):
        def advance(self, node: str, done: int, total: int) -> None:
            stop.set()  # Ctrl-C after the first block

    with pytest.raises(KeyboardInterrupt):
        sync_to({"node1": FakeNode(tmp_path / "node")}, root, Interrupted(), stop)
    assert (tmp_path / "node/a.py").read_text() == "old\n"
    assert sorted(path.name for path in (tmp_path / "node").iterdir()) == ["a.py"]


def test_a_node_without_python_fails_the_sync_with_the_nodes_words(tmp_path: Path) -> None:
    failed = sync_to({"node1": FakeNode(tmp_path, fail="sh: 1: python3: not found")},
                     tree(tmp_path / "code", {"a.py": "x\n"}))["node1"]
    assert isinstance(failed, CommandFailed)
    assert str(failed).startswith("node1: sync: 'read ")
    assert str(failed).endswith("exited 127: sh: 1: python3: not found")


def test_a_folder_the_node_refuses_is_the_nodes_one_line(tmp_path: Path) -> None:
    (tmp_path / "node").mkdir(mode=0o777)
    (tmp_path / "node").chmod(0o777)
    failed = sync_to({"node1": FakeNode(tmp_path / "node")},
                     tree(tmp_path / "code", {"a.py": "x\n"}))["node1"]
    assert isinstance(failed, HostError)
    assert str(failed) == (f"node1: sync: {tmp_path}/node is writable by every user (mode 777): "
                           "someone else could put a module there that the job would import "
                           "(chmod go-w)")
