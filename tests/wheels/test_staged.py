"""Root's checked copy of an upload (wheels.staged), its script run for real on this machine:
only the files this machine sent, each with its sha256, in a folder of root's made 0700; a
file changed, missing, swapped for a link or grown fails in one line naming it, leaving no
copy, even where the copy was optional; uv is unpacked from that copy. On a 1-node test
cluster, a wheel rewritten on the node between upload and install is refused (before this
check, the rewritten package was installed and its code ran)."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import cast

import pytest

from nodeprov.errors import HostError
from nodeprov.inventory import Host
from nodeprov.remote.actions import Action, Upload
from nodeprov.remote.session import Result, Session
from nodeprov.tasks.torch.install import REMOTE_WHEELHOUSE
from nodeprov.wheels import installer
from nodeprov.wheels.peer_exec import execute
from nodeprov.wheels.peers import Distribution, PeerUpload, WheelFile
from nodeprov.wheels.sources import Sources
from nodeprov.wheels.staged import WheelChanged, root_copy, stage
from tests.conftest import MakeTestbed
from tests.tasks.torch.test_torch import TEST_VENV, apply, mirror, torch_on, write_files
from tests.wheels.test_peer_exec import INSTALL, LocalSession, wheels  # noqa: F401

TORCH = "torch-2.13.0+cpu-cp311-none-any.whl"
SIX = "six-1.17.0-py2.py3-none-any.whl"


class Node:
    """A node's ``run``, on this machine."""

    host = Host("node1", "127.0.0.1", "127.0.0.1")

    def run(self, argv: Sequence[str], *, task: str = "", what: str = "") -> Result:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=60)
        return Result(done.stdout, done.stderr, done.returncode)


def sent(folder: Path, files: dict[str, bytes]) -> tuple[WheelFile, ...]:
    """``files`` written into the upload ``folder``, as this machine knows them."""
    folder.mkdir()
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return tuple(WheelFile(name, hashlib.sha256(data).hexdigest(), len(data))
                 for name, data in files.items())


def staged_into(upload: Path, files: Sequence[WheelFile]) -> Path:
    target = Path(root_copy(str(upload)))
    stage(cast(Session, Node()), "torch", "python3", str(upload), str(target), files)
    return target


def swapped(path: Path, make: Callable[[], None]) -> None:
    """``path`` replaced by what ``make`` puts there (a link, a pipe)."""
    path.unlink()
    make()


@pytest.fixture
def upload(tmp_path: Path) -> Path:
    return tmp_path / "cpu-torch-2.13.0"


def test_the_copy_holds_what_this_machine_sent_and_nothing_else(upload: Path) -> None:
    files = sent(upload, {TORCH: b"t" * 3_000_000, SIX: b"six"})
    (upload / "extra-1.0-py3-none-any.whl").write_bytes(b"put there on the node")
    os.umask(0o022)
    copy = staged_into(upload, files)
    assert copy == upload.with_name("cpu-torch-2.13.0.root")
    assert os.stat(copy).st_mode & 0o777 == 0o700
    assert {path.name: path.read_bytes() for path in copy.iterdir()} == {
        TORCH: b"t" * 3_000_000, SIX: b"six"}


@pytest.mark.parametrize(("change", "why"), [
    (lambda path: path.write_bytes(b"sox"), "does not have the sha256 of the file this "
                                             "machine sent"),
    (lambda path: path.unlink(), "is missing"),
    (lambda path: swapped(path, lambda: path.symlink_to("/etc/passwd")), "is missing"),
    (lambda path: path.write_bytes(b"six" * 2), "is larger than the file this machine sent"),
    (lambda path: swapped(path, lambda: os.mkfifo(path)), "is not a plain file"),
])
def test_a_file_changed_after_the_upload_fails_in_one_line_naming_it(
        upload: Path, change: Callable[[Path], object], why: str) -> None:
    files = sent(upload, {TORCH: b"t" * 1000, SIX: b"six"})
    copy = Path(root_copy(str(upload)))
    copy.mkdir()  # a previous run's copy: replaced, never added to
    (copy / "old-1.0-py3-none-any.whl").write_bytes(b"old")
    change(upload / SIX)
    with pytest.raises(WheelChanged) as failed:
        staged_into(upload, files)
    assert str(failed.value) == (
        f"node1: torch: {SIX} in {upload} {why}: changed on the node after the upload? nothing "
        "was installed (look for a process of the login user writing there)")
    assert not copy.exists()  # nothing left to install from


def test_words_from_the_node_name_no_file_of_its_own(upload: Path) -> None:
    class Lying(Node):
        def run(self, argv: Sequence[str], *, task: str = "", what: str = "") -> Result:
            return Result("7 sha256\n", "Traceback ...\nOSError: no room\n", 3)

    with pytest.raises(HostError, match=r"could not copy the wheels from .*: OSError: no") as no:
        stage(cast(Session, Lying()), "torch", "python3", str(upload), "/r",
              (WheelFile(SIX, "0" * 64, 3),))
    assert not isinstance(no.value, WheelChanged)  # an optional copy's failure: a warning


def test_uv_is_unpacked_from_roots_copy_of_its_upload() -> None:
    copy = installer.uv_copy(installer.UvState(False, (2, 36)), "x86_64", "/usr/bin/python3",
                             Sources())
    assert copy is not None and copy.staged == root_copy(copy.remote_path)
    assert copy.then[3:] == (copy.staged, installer.UV, copy.remote_path)


class Swapping(LocalSession):
    """A node whose login user replaces a wheel right after the upload."""

    def execute(self, task: str, actions: Sequence[Action], *, then_read: object = None) -> None:
        super().execute(task, actions)
        for action in actions:
            if isinstance(action, Upload):
                (Path(action.remote_path) / SIX).write_bytes(b"sox")


@pytest.mark.parametrize("optional", ["", "the node installs from its index itself"])
def test_a_swap_between_upload_and_install_fails_the_task_even_for_an_optional_copy(
        wheels: Path, optional: str) -> None:  # noqa: F811
    remote = wheels.parent / "node1" / "wheelhouse"
    remote.parent.mkdir()
    node = Swapping("node1")
    copy = PeerUpload(str(wheels), str(remote), "set", python="python3", optional=optional,
                      staged=root_copy(str(remote)))
    with pytest.raises(WheelChanged, match=f"{SIX} in {remote} does not have the sha256"):
        execute(cast(Session, node), Distribution(), "torch", [copy, INSTALL])
    assert INSTALL not in node.executed and not Path(copy.staged).exists()


# argv: the upload folder. Rewrites filelock's wheel with a line added to its __init__.py.
SWAP = r"""import glob, os, sys, zipfile
(path,) = glob.glob(os.path.join(sys.argv[1], "filelock-*.whl"))
with zipfile.ZipFile(path) as wheel:
    members = {name: wheel.read(name) for name in wheel.namelist()}
members["filelock/__init__.py"] += b"\nSWAPPED = True\n"
with zipfile.ZipFile(path + ".tmp", "w") as wheel:
    for name, data in members.items():
        wheel.writestr(name, data)
os.replace(path + ".tmp", path)
print(os.path.basename(path))
"""


@pytest.mark.integration
def test_a_wheel_replaced_on_the_node_after_the_upload_is_refused(
        make_testbed: MakeTestbed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = make_testbed(nodes=1)
    (node,) = cluster.nodes
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    real, replaced = Session._upload, []

    def then_swapped(self: Session, task: str, action: Upload) -> None:
        """The upload, then a process of the login user rewriting one of its wheels: still a
        valid wheel, its package's code changed (the installers do not check RECORD)."""
        real(self, task, action)
        if "/wheelhouse/" in action.remote_path:
            replaced.append(cluster.exec(node, "python3", "-c", SWAP, action.remote_path,
                                         check=True).stdout.strip())

    monkeypatch.setattr(Session, "_upload", then_swapped)
    code, out = apply(*write_files(cluster, tmp_path, **mirror(), wheelhouse=True))
    (name,) = replaced
    upload = f"{REMOTE_WHEELHOUSE}/cpu-torch-2.13.0"
    # larger, or its sha256 differs: which depends on how the new zip compresses
    refused = (f"{node}: torch: {re.escape(name)} in {re.escape(upload)} (is larger than|"
               "does not have the sha256 of) the file this machine sent: changed on the node "
               "after the upload\\? nothing was installed")
    assert code == 1 and re.search(refused, out), out
    assert "No module named 'torch'" in torch_on(cluster, node)
    imported = cluster.exec(node, f"{TEST_VENV}/bin/python", "-c", "import filelock")
    assert "No module named 'filelock'" in imported.stderr  # the swapped code never ran
    assert cluster.exec(node, "test", "-e", root_copy(upload)).returncode == 1  # no copy left
