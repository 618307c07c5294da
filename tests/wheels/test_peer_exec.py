"""A PeerUpload or PeerDownload run for real on this machine: the seed's server
(peer_scripts.SERVE) on loopback, the others' fetch (peer_scripts.FETCH), each checked against
this machine's copy or the seed's list of its download, and the upload from this machine (the
node's own download) whenever the seed cannot give a good copy."""

from __future__ import annotations

import hashlib
import pwd
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest

from nodeprov.errors import CommandFailed, HostError
from nodeprov.inventory import Host
from nodeprov.nodeside.peer_scripts import FETCH, LIST, SERVE
from nodeprov.remote.session import Result
from nodeprov.tasks.base import Action, Local, Run, Upload
from nodeprov.wheels.peer_exec import execute
from nodeprov.wheels.peers import Distribution, PeerDownload, PeerUpload


class LocalSession:
    """Runs commands on this machine; records what ``execute`` was given, doing its uploads
    as a copy."""

    def __init__(self, name: str, broken: str = "") -> None:
        self.host = Host(name, "127.0.0.1", "127.0.0.1")
        self.executed: list[Action] = []
        self.broken = broken  # an argv word that makes run() fail as a lost connection would

    def execute(self, task: str, actions: Sequence[Action], *,
                then_read: Any = None) -> None:
        for action in actions:
            self.executed.append(action)
            if isinstance(action, Upload):
                for path in Path(action.local_path).iterdir():
                    shutil.copy(path, Path(action.remote_path) / path.name)
            if isinstance(action, Run) and action.argv[0] == "sh":  # a download
                done = subprocess.run(action.argv, capture_output=True, text=True, timeout=60)
                if done.returncode:
                    raise CommandFailed(self.host.name, task, "download", done.returncode,
                                        done.stderr)

    def run(self, argv: Sequence[str], *, task: str = "", what: str = "") -> Result:
        if self.broken and self.broken in argv:
            raise HostError(self.host.name, task, "connection lost")
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=60)
        return Result(done.stdout, done.stderr, done.returncode)


class Unreachable(LocalSession):
    def execute(self, task: str, actions: Sequence[Action], *, then_read: Any = None) -> None:
        raise HostError(self.host.name, task, "connection lost")


@pytest.fixture
def wheels(tmp_path: Path) -> Path:
    local = tmp_path / "admin"
    local.mkdir()
    (local / "torch-2.13.0+cpu-cp311-none-any.whl").write_bytes(b"t" * 3_000_000)
    (local / "six-1.17.0-py2.py3-none-any.whl").write_bytes(b"six")
    for node in ("node1", "node2", "node3"):
        (tmp_path / node / "wheelhouse").mkdir(parents=True)
    return local


def actions(local: Path, node: str) -> list[Action]:
    remote = local.parent / node / "wheelhouse"
    return [Local(("true",)), PeerUpload(str(local), str(remote), "set", "127.0.0.1",
                                          "python3"), Run(("install",))]


def apply(distribution: Distribution, session: LocalSession, local: Path) -> None:
    execute(session, distribution, "torch", actions(local, session.host.name))


def held_path(local: Path, node: str) -> Path:
    return local.parent / node / "wheelhouse"


def held(local: Path, node: str) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in held_path(local, node).iterdir()}


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_the_seed_uploads_once_and_the_others_fetch_from_it(wheels: Path) -> None:
    distribution = Distribution()
    sessions = [LocalSession(f"node{n}") for n in (1, 2, 3)]
    assert distribution.seed_for("set", "node1") == "node1"  # node1 planned first
    threads = [threading.Thread(target=apply, args=(distribution, s, wheels)) for s in sessions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    uploads = [a for s in sessions for a in s.executed if isinstance(a, Upload)]
    assert [type(a) for a in uploads] == [Upload]  # the seed's, as a plain upload
    want = {path.name: path.read_bytes() for path in wheels.iterdir()}
    assert all(held(wheels, node) == want for node in ("node1", "node2", "node3"))
    assert all(s.executed[-1] == Run(("install",)) for s in sessions)
    ports = [int(url.rsplit(":", 1)[1].strip("/")) for url in sources(distribution, 3)]
    assert len(ports) == 3 and all(map(listening, ports))  # the peers serve too
    distribution.close()
    for _ in range(50):
        if not any(map(listening, ports)):
            break
        time.sleep(0.1)
    assert not any(map(listening, ports))  # stopped


def sources(distribution: Distribution, count: int) -> set[str]:
    """The URLs of ``count`` fetches started at once (the least busy source each), released."""
    urls = [distribution.acquire("set") for _ in range(count)]
    for url in urls:
        assert url is not None
        distribution.release("set", url, good=True)
    return {url for url in urls if url is not None}


def test_a_node_that_fetched_serves_the_next_and_a_bad_copy_is_skipped(wheels: Path) -> None:
    distribution = Distribution()
    distribution.seed_for("set", "node1")
    apply(distribution, LocalSession("node1"), wheels)
    apply(distribution, LocalSession("node2"), wheels)  # from node1, then serves
    (node2_url,) = sources(distribution, 2) - sources(distribution, 1)
    seed_url = distribution.acquire("set")  # node1 busy: the next fetch goes to node2
    # node2's copy changed in place after it was checked (its server holds the file open)
    (held_path(wheels, "node2") / "six-1.17.0-py2.py3-none-any.whl").write_bytes(b"evil")
    node3 = LocalSession("node3")
    apply(distribution, node3, wheels)  # node2's refused, then node1's, still busy: good
    assert not [a for a in node3.executed if isinstance(a, Upload)]
    assert held(wheels, "node3")["six-1.17.0-py2.py3-none-any.whl"] == b"six"
    assert seed_url is not None
    distribution.release("set", seed_url, good=True)
    serving = sources(distribution, 2)
    assert len(serving) == 2 and seed_url in serving and node2_url not in serving  # node3 serves
    distribution.close()


def test_a_seed_whose_server_fails_leaves_the_others_an_upload(wheels: Path) -> None:
    distribution = Distribution()
    seed = LocalSession("node1", broken="-c")  # the SERVE command's connection drops
    distribution.seed_for("set", "node1")
    apply(distribution, seed, wheels)  # its own install goes on
    assert seed.executed[-1] == Run(("install",))
    peer = LocalSession("node2")
    apply(distribution, peer, wheels)
    assert [type(a) for a in peer.executed if isinstance(a, Upload)] == [Upload]
    assert distribution.warnings_for("node2") == [
        "wheels uploaded from this machine after all: no node served them (the seed failed, or "
        "none had room in time)"]
    assert held(wheels, "node2") == held(wheels, "node1")


def test_a_seed_failing_before_its_upload_fails_alone(wheels: Path) -> None:
    distribution = Distribution()
    distribution.seed_for("set", "node1")
    with pytest.raises(HostError):
        apply(distribution, Unreachable("node1"), wheels)
    peer = LocalSession("node2")
    apply(distribution, peer, wheels)  # not left waiting: uploaded from this machine
    assert [type(a) for a in peer.executed if isinstance(a, Upload)] == [Upload]
    assert distribution.warnings_for("node2") == [
        "wheels uploaded from this machine after all: no node served them (the seed failed, or "
        "none had room in time)"]


def test_a_wrong_file_from_the_seed_is_refused_and_uploaded_instead(wheels: Path) -> None:
    distribution = Distribution()
    distribution.seed_for("set", "node1")
    apply(distribution, LocalSession("node1"), wheels)
    # a file changed in place on the seed (its server holds the file open)
    (held_path(wheels, "node1") / "six-1.17.0-py2.py3-none-any.whl").write_bytes(b"evil")
    peer = LocalSession("node2")
    remote = wheels.parent / "node2" / "wheelhouse"
    fetch = PeerUpload(str(wheels), str(remote), "set", "127.0.0.1", "python3")
    (seed_url,) = sources(distribution, 1)
    refused = peer.run([fetch.python, "-c", FETCH, seed_url, str(remote), "60",
                        *[w for pair in distribution.digests(str(wheels)) for w in pair]])
    assert refused.exit_code == 1 and "six-1.17.0-py2.py3-none-any.whl: sha256 " in refused.stderr
    assert not (remote / "six-1.17.0-py2.py3-none-any.whl").exists()
    assert not list(remote.glob(".*.part"))
    apply(distribution, peer, wheels)
    assert [type(a) for a in peer.executed if isinstance(a, Upload)] == [Upload]
    (warning,) = distribution.warnings_for("node2")
    assert warning.startswith(f"wheels uploaded from this machine after all: {seed_url}: "
                              "six-1.17.0-py2.py3-none-any.whl: sha256 ")
    assert held(wheels, "node2")["six-1.17.0-py2.py3-none-any.whl"] == b"six"
    distribution.close()


def test_a_server_nobody_stops_stops_by_itself_when_idle(wheels: Path) -> None:
    started = subprocess.run(["python3", "-c", SERVE, str(wheels), "127.0.0.1", "60", "0.5"],
                             capture_output=True, text=True, timeout=30, check=True)
    port, pid = map(int, started.stdout.split())
    uid = next(line.split()[1] for line in Path(f"/proc/{pid}/status").read_text().splitlines()
               if line.startswith("Uid:"))
    assert int(uid) == pwd.getpwnam("nobody").pw_uid  # started as root, serves as nobody
    assert listening(port)  # a connection, then nothing: idle from then on
    for _ in range(100):
        if not Path(f"/proc/{pid}").exists():
            break
        time.sleep(0.1)
    assert not Path(f"/proc/{pid}").exists()
    assert not listening(port)


def test_a_source_that_trickles_is_given_up(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()

        def trickle() -> None:
            connection, _ = listener.accept()
            with connection, suppress(OSError):  # the fetch hangs up first
                connection.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 100\r\n\r\n")
                for _ in range(40):  # one byte each 0.1 s: never stalls 60 s, never ends
                    time.sleep(0.1)
                    connection.sendall(b"x")

        server = threading.Thread(target=trickle)
        server.start()
        port = listener.getsockname()[1]
        started = time.monotonic()
        slow = subprocess.run(["python3", "-c", FETCH, f"http://127.0.0.1:{port}/", str(tmp_path),
                               "1", "a.whl", "0" * 64], capture_output=True, text=True,
                              timeout=30)
        server.join()
    assert slow.returncode == 1 and "a.whl: too slow, gave up after 1 seconds" in slow.stderr
    assert time.monotonic() - started < 4 and list(tmp_path.iterdir()) == []


# --- a wheel set the seed downloads itself ------------------------------------------------------

# what pip download does here: copy the index's wheels (argv: the index, the destination)
COPY = 'cp -- "$1"/*.whl "$2"/'


def downloads(index: Path, node: str) -> list[Action]:
    remote = index.parent / node / "wheelhouse"
    download = PeerDownload(("sh", "-c", COPY, "download", str(index), str(remote)),
                            key="set", remote_path=str(remote), address="127.0.0.1",
                            python="python3")
    return [download, Run(("install",))]


def download_apply(distribution: Distribution, session: LocalSession, index: Path) -> None:
    execute(session, distribution, "torch", downloads(index, session.host.name))


def downloaded_by(sessions: Sequence[LocalSession]) -> list[str]:
    return [s.host.name for s in sessions for a in s.executed if isinstance(a, Run)
            and a.argv[0] == "sh"]


def test_the_seed_downloads_once_and_the_others_fetch_its_copy(wheels: Path) -> None:
    distribution = Distribution()
    sessions = [LocalSession(f"node{n}") for n in (1, 2, 3)]
    assert distribution.seed_for("set", "node1") == "node1"
    threads = [threading.Thread(target=download_apply, args=(distribution, s, wheels))
               for s in sessions]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert downloaded_by(sessions) == ["node1"]
    assert not any(isinstance(a, PeerDownload) for s in sessions for a in s.executed)
    want = {path.name: path.read_bytes() for path in wheels.iterdir()}
    assert all(held(wheels, node) == want for node in ("node1", "node2", "node3"))
    assert all(s.executed[-1] == Run(("install",)) for s in sessions)
    assert len(sources(distribution, 3)) == 3  # every node serves
    assert all(distribution.warnings_for(s.host.name) == [] for s in sessions)
    distribution.close()


def test_a_seed_whose_download_fails_leaves_each_node_its_own(wheels: Path,
                                                              tmp_path: Path) -> None:
    distribution = Distribution()
    distribution.seed_for("set", "node1")
    with pytest.raises(CommandFailed):  # the index is not there (for the seed)
        download_apply(distribution, LocalSession("node1"), tmp_path / "no-index")
    peer = LocalSession("node2")
    download_apply(distribution, peer, wheels)
    assert downloaded_by([peer]) == ["node2"]
    assert distribution.warnings_for("node2") == [
        "wheels downloaded by this node after all: no node served them (the seed failed, or "
        "none had room in time)"]


class ForgedList(LocalSession):
    """A seed whose list of its download names a path outside the others' wheel folder."""

    def run(self, argv: Sequence[str], *, task: str = "", what: str = "") -> Result:
        if LIST in argv:
            return Result(f"{'0' * 64} 3 ../../../etc/cron.d/evil\n", "", 0)
        return super().run(argv, task=task, what=what)


def test_a_list_the_seed_forges_is_not_trusted(wheels: Path) -> None:
    distribution = Distribution()
    distribution.seed_for("set", "node1")
    download_apply(distribution, ForgedList("node1"), wheels)
    peer = LocalSession("node2")
    download_apply(distribution, peer, wheels)  # not served by that seed: downloads itself
    assert downloaded_by([peer]) == ["node2"]
    assert held(wheels, "node2") == {path.name: path.read_bytes() for path in wheels.iterdir()}
    assert distribution.warnings_for("node2")[0].startswith(
        "wheels downloaded by this node after all: no node served them")
    distribution.close()


def test_the_list_script_gives_name_sha256_and_size(wheels: Path) -> None:
    listed = subprocess.run(["python3", "-c", LIST, str(wheels)], capture_output=True,
                            text=True, check=True).stdout.splitlines()
    assert listed == [
        "44778d82365e4af681c40d5f0eef5cf6f5899d3f0ac335050a7ed6779cf3f674 3 "
        "six-1.17.0-py2.py3-none-any.whl",
        f"{hashlib.sha256(b't' * 3_000_000).hexdigest()} 3000000 "
        "torch-2.13.0+cpu-cp311-none-any.whl"]
