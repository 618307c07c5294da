"""download_once run for real on this machine: the seed downloads exactly the files this machine
resolved (each with the index's sha256), the others fetch its copy and check it against those
hashes, never against anything the seed says; a poisoned seed poisons nobody else."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import cast

import pytest

from nodeprov.remote.actions import Action, Run
from nodeprov.remote.session import Session
from nodeprov.wheels import installer
from nodeprov.wheels.peer_exec import execute
from nodeprov.wheels.peers import Distribution, PeerDownload
from nodeprov.wheels.resolve import Pinned
from nodeprov.wheels.thismachine import ThisMachine, WheelSet
from nodeprov.wheels.wheelhouse import DownloadFailed
from tests.wheels.test_peer_exec import INSTALL, LocalSession, sources

# what pip download does here: copy the index's wheels (argv: the index, the destination)
COPY = 'cp -- "$1"/*.whl "$2"/'
WANTED = WheelSet(("--python-version", "3.11"), ("torch==2.13.0+cpu",))


class Resolved(ThisMachine):
    """This machine, resolving ``index``'s files as pip's report would give them."""

    def __init__(self, index: Path | None) -> None:
        super().__init__()
        self.index = index

    def pins(self, wanted: WheelSet) -> tuple[Pinned, ...]:
        if self.index is None:
            raise DownloadFailed("from https://mirror.example/simple: No matching distribution "
                                 "found for torch==2.13.0+cpu")
        return tuple(Pinned(path.name.split("-")[0], path.name.split("-")[1], path.name,
                            hashlib.sha256(path.read_bytes()).hexdigest())
                     for path in sorted(self.index.glob("*.whl")))


@pytest.fixture
def index(tmp_path: Path) -> Path:
    """The index every node downloads from, as this machine resolved it."""
    folder = tmp_path / "index"
    folder.mkdir()
    (folder / "torch-2.13.0+cpu-cp311-none-any.whl").write_bytes(b"t" * 3_000_000)
    (folder / "six-1.17.0-py2.py3-none-any.whl").write_bytes(b"six")
    return folder


def node_dir(index: Path, node: str) -> Path:
    return index.parent / node / "wheelhouse"


def actions(index: Path, node: str, seen_index: Path | None = None) -> list[Action]:
    """mkdir, the download (from ``seen_index``: what this node's index gives), the install."""
    remote = str(node_dir(index, node))
    download = PeerDownload(("sh", "-c", COPY, "download", str(seen_index or index), remote, "--",
                             "torch==2.13.0+cpu"), key="set", remote_path=remote,
                            address="127.0.0.1", python="python3", wanted=WANTED)
    return [Run(("sh", "-c", installer.MAKE_ROOT_DIR, "mkdir", remote)), download, INSTALL]


def apply(distribution: Distribution, session: LocalSession, index: Path,
          seen_index: Path | None = None) -> None:
    execute(cast(Session, session), distribution, "torch",
            actions(index, session.host.name, seen_index))


def downloads(session: LocalSession) -> list[tuple[str, ...]]:
    return [a.argv for a in session.executed if isinstance(a, Run) and COPY in a.argv]


def held(index: Path, node: str) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in node_dir(index, node).iterdir()
            if path.suffix == ".whl"}


def test_the_seed_downloads_what_this_machine_resolved_and_the_others_fetch_it(
        index: Path) -> None:
    distribution = Distribution(here=Resolved(index))
    sessions = [LocalSession(f"node{n}") for n in (1, 2, 3)]
    assert distribution.seed_for("set", "node1") == "node1"
    threads = [threading.Thread(target=apply, args=(distribution, s, index)) for s in sessions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    (seed_download,) = downloads(sessions[0])
    requirements = f"{node_dir(index, 'node1')}/.nodeprov-requirements.txt"
    assert seed_download[-3:] == ("--no-deps", "-r", requirements) and "--" not in seed_download
    assert Path(requirements).read_text() == (
        f"six==1.17.0 --hash=sha256:{hashlib.sha256(b'six').hexdigest()}\n"
        f"torch==2.13.0+cpu --hash=sha256:{hashlib.sha256(b't' * 3_000_000).hexdigest()}\n")
    assert downloads(sessions[1]) == downloads(sessions[2]) == []  # fetched instead
    want = {path.name: path.read_bytes() for path in index.iterdir()}
    assert all(held(index, node) == want for node in ("node1", "node2", "node3"))
    assert all(s.executed[-1] == INSTALL for s in sessions)
    assert len(sources(distribution, 3)) == 3  # every node serves
    assert all(distribution.warnings_for(s.host.name) == [] for s in sessions)
    distribution.close()


def test_a_poisoned_seed_poisons_no_other_node(index: Path, tmp_path: Path) -> None:
    """The seed's index gives a wheel with other contents (a compromised seed, or its mirror):
    the seed will not serve it (this machine's hash, checked by its server), and every other
    node downloads its own."""
    poisoned = tmp_path / "poisoned-index"
    shutil_copy(index, poisoned)
    (poisoned / "six-1.17.0-py2.py3-none-any.whl").write_bytes(b"rm!")  # the same size
    distribution = Distribution(here=Resolved(index))
    distribution.seed_for("set", "node1")
    apply(distribution, LocalSession("node1"), index, seen_index=poisoned)
    for node in ("node2", "node3"):
        session = LocalSession(node)
        apply(distribution, session, index)
        assert held(index, node)["six-1.17.0-py2.py3-none-any.whl"] == b"six"
        assert len(downloads(session)) == 1  # its own, from its own index
    (refused,) = distribution.warnings_for("node1")
    assert refused.startswith("the other nodes get the wheels elsewhere: six-1.17.0-py2.py3-"
                              "none-any.whl: not served: its sha256 ")
    assert refused.endswith(f"is not this machine's {hashlib.sha256(b'six').hexdigest()[:16]}...")
    assert all(distribution.warnings_for(node) == [
        "wheels downloaded by this node after all: no node served them (the seed failed, or "
        "none had room in time)"] for node in ("node2", "node3"))
    distribution.close()


def shutil_copy(source: Path, target: Path) -> None:
    target.mkdir()
    for path in source.iterdir():
        (target / path.name).write_bytes(path.read_bytes())


def test_without_this_machines_hashes_each_node_downloads_its_own(index: Path) -> None:
    distribution = Distribution(here=Resolved(None))
    distribution.seed_for("set", "node1")
    for node in ("node1", "node2"):
        session = LocalSession(node)
        apply(distribution, session, index)
        assert len(downloads(session)) == 1 and session.executed[-1] == INSTALL
        assert distribution.warnings_for(node) == [
            "wheels downloaded by this node alone: this machine could not resolve them to "
            "check the others' copies (from https://mirror.example/simple: No matching "
            "distribution found for torch==2.13.0+cpu)"]
    assert distribution.acquire("set") is None  # nobody serves


def test_a_seed_whose_download_fails_downloads_its_own_and_so_do_the_others(
        index: Path, tmp_path: Path) -> None:
    distribution = Distribution(here=Resolved(index))
    distribution.seed_for("set", "node1")
    seed = LocalSession("node1")
    with pytest.raises(Exception, match="cp: cannot stat"):  # its index is gone: nothing left
        apply(distribution, seed, index, seen_index=tmp_path / "no-index")
    (warning,) = distribution.warnings_for("node1")
    assert warning.startswith("the wheels this machine resolved could not be downloaded here "
                              "(cp: cannot stat") and warning.endswith(
        "): this node downloaded its own")
    peer = LocalSession("node2")
    apply(distribution, peer, index)
    assert len(downloads(peer)) == 1 and held(index, "node2")
    assert distribution.warnings_for("node2") == [
        "wheels downloaded by this node after all: no node served them (the seed failed, or "
        "none had room in time)"]
