"""A PeerUpload run for real on this machine: the seed's server (peer_scripts.SERVE) on
loopback, the others' fetch (peer_scripts.FETCH), each file checked against this machine's copy,
the upload from this machine whenever the seed cannot give a good copy; a copy that is only an
optimisation (uv) warns and lets the task go on; an install that fails says so in one line."""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import pytest

from nodeprov.errors import CommandFailed, HostError
from nodeprov.inventory import Host
from nodeprov.remote.actions import Action, Run, Upload, Write
from nodeprov.remote.session import Result, Session
from nodeprov.wheels import installer
from nodeprov.wheels.installer import Origin
from nodeprov.wheels.peer_exec import InstallFailed, execute
from nodeprov.wheels.peers import Distribution, PeerUpload
from nodeprov.wheels.sources import Sources
from nodeprov.wheels.thismachine import ThisMachine, WheelSet
from nodeprov.wheels.wheelhouse import DownloadFailed


class LocalSession:
    """Runs a node's commands on this machine (its folders under tmp); records what
    ``execute`` was given, doing uploads as copies and stand-in commands not at all."""

    def __init__(self, name: str, broken: str = "") -> None:
        self.host = Host(name, "127.0.0.1", "127.0.0.1")
        self.executed: list[Action] = []
        self.broken = broken  # an argv word that makes run() fail as a lost connection would
        self.transfers = None  # no live display: what the node writes is not counted

    def execute(self, task: str, actions: Sequence[Action], *,
                then_read: Any = None) -> None:
        for action in actions:
            self.executed.append(action)
            if isinstance(action, Upload):  # a folder's files, as the SFTP upload sends them
                for path in Path(action.local_path).iterdir():
                    if path.is_file() and not path.name.startswith("."):
                        shutil.copy(path, Path(action.remote_path) / path.name)
            elif isinstance(action, Write):
                Path(action.path).write_text(action.content)
            elif isinstance(action, Run) and action.argv[0] in ("sh", "rm", "python3"):
                done = subprocess.run(action.argv, capture_output=True, text=True, timeout=60)
                if done.returncode:
                    raise CommandFailed(self.host.name, task, str(action), done.returncode,
                                        done.stdout + done.stderr, hint=action.hint)

    def run(self, argv: Sequence[str], *, task: str = "", what: str = "") -> Result:
        if self.broken and self.broken in argv:
            raise HostError(self.host.name, task, "connection lost")
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=60)
        return Result(done.stdout, done.stderr, done.returncode)


class Unreachable(LocalSession):
    def execute(self, task: str, actions: Sequence[Action], *, then_read: Any = None) -> None:
        raise HostError(self.host.name, task, "connection lost")


class Offline(ThisMachine):
    """This machine without the index: every download fails, and is counted."""

    def __init__(self) -> None:
        super().__init__()
        self.attempts = 0

    def fill(self, folder: str, wanted: WheelSet) -> str:
        def fail() -> str:
            self.attempts += 1
            raise DownloadFailed("from file:///mirror/simple: No matching distribution found "
                                 "for uv==0.13.9")
        return self._fills.get(folder, fail)


@pytest.fixture
def wheels(tmp_path: Path) -> Path:
    local = tmp_path / "admin"
    local.mkdir()
    (local / "torch-2.13.0+cpu-cp311-none-any.whl").write_bytes(b"t" * 3_000_000)
    (local / "six-1.17.0-py2.py3-none-any.whl").write_bytes(b"six")
    (local / ".fetch.log").write_text("pip download --index-url https://ci:s3cret@m/simple\n")
    return local


INSTALL = Run(("install",))  # a stand-in for what follows the copy


def actions(local: Path, node: str, **copy: Any) -> list[Action]:
    remote = local.parent / node / "wheelhouse"
    return [PeerUpload(str(local), str(remote), "set", "127.0.0.1", "python3", **copy), INSTALL]


def apply(distribution: Distribution, session: LocalSession, local: Path, **copy: Any) -> None:
    execute(cast(Session, session), distribution, "torch",
            actions(local, session.host.name, **copy))


def held_path(local: Path, node: str) -> Path:
    return local.parent / node / "wheelhouse"


def held(local: Path, node: str) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in held_path(local, node).iterdir()}


def listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def sources(distribution: Distribution, count: int) -> set[str]:
    """The URLs of ``count`` fetches started at once (the least busy source each), released."""
    urls = [distribution.acquire("set") for _ in range(count)]
    for url in urls:
        assert url is not None
        distribution.release("set", url, good=True)
    return {url for url in urls if url is not None}


def uploaded(session: LocalSession) -> int:
    """How many files were uploaded from this machine to the session's node."""
    return len([a for a in session.executed if isinstance(a, Upload)])


def port_of(url: str) -> int:
    return int(url.split("/")[2].rsplit(":", 1)[1])


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
    assert uploaded(sessions[0]) == 1 and len(uploads) == 1  # to the seed, once
    want = {"torch-2.13.0+cpu-cp311-none-any.whl": b"t" * 3_000_000,
            "six-1.17.0-py2.py3-none-any.whl": b"six"}  # not this machine's log
    assert all(held(wheels, node) == want for node in ("node1", "node2", "node3"))
    assert all(s.executed[-1] == INSTALL for s in sessions)
    urls = sources(distribution, 3)
    assert len(urls) == 3 and all(map(listening, map(port_of, urls)))  # the peers serve too
    assert all(len(url.split("/")[3]) >= 20 for url in urls)  # each under a token of the run
    distribution.close()
    for _ in range(50):
        if not any(map(listening, map(port_of, urls))):
            break
        time.sleep(0.1)
    assert not any(map(listening, map(port_of, urls)))  # stopped


def test_a_node_that_fetched_serves_the_next_and_a_bad_copy_is_skipped(wheels: Path) -> None:
    distribution = Distribution()
    distribution.seed_for("set", "node1")
    apply(distribution, LocalSession("node1"), wheels)
    apply(distribution, LocalSession("node2"), wheels)  # from node1, then serves
    (node2_url,) = sources(distribution, 2) - sources(distribution, 1)
    seed_url = distribution.acquire("set")  # node1 busy: the next fetch goes to node2
    # node2's copy changed in place after it was checked (its server holds the file open)
    (held_path(wheels, "node2") / "six-1.17.0-py2.py3-none-any.whl").write_bytes(b"bad")
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
    assert seed.executed[-1] == INSTALL
    peer = LocalSession("node2")
    apply(distribution, peer, wheels)
    assert uploaded(peer) == 1
    assert distribution.warnings_for("node2") == [
        "wheels uploaded from this machine after all: no node served them (the seed failed, or "
        "none had room in time)"]
    assert held(wheels, "node2") == held(wheels, "node1")


def test_a_seed_failing_before_its_copy_leaves_nobody_waiting(wheels: Path) -> None:
    distribution = Distribution()
    distribution.seed_for("set", "node1")
    with pytest.raises(HostError):  # its step before the copy fails
        execute(cast(Session, Unreachable("node1")), distribution, "torch",
                [Run(("true",)), *actions(wheels, "node1")])
    peer = LocalSession("node2")
    apply(distribution, peer, wheels)  # not left waiting: uploaded from this machine
    assert uploaded(peer) == 1
    assert distribution.warnings_for("node2") == [
        "wheels uploaded from this machine after all: no node served them (the seed failed, or "
        "none had room in time)"]


def test_a_wrong_file_from_the_seed_is_refused_and_uploaded_instead(wheels: Path) -> None:
    distribution = Distribution()
    distribution.seed_for("set", "node1")
    apply(distribution, LocalSession("node1"), wheels)
    # a file changed in place on the seed (its server holds the file open)
    (held_path(wheels, "node1") / "six-1.17.0-py2.py3-none-any.whl").write_bytes(b"bad")
    (seed_url,) = sources(distribution, 1)
    peer = LocalSession("node2")
    apply(distribution, peer, wheels)
    assert uploaded(peer) == 1
    (warning,) = distribution.warnings_for("node2")
    assert warning.startswith(f"wheels uploaded from this machine after all: "
                              f"127.0.0.1:{port_of(seed_url)}: "
                              "six-1.17.0-py2.py3-none-any.whl: sha256 ")
    assert seed_url.split("/")[3] not in warning  # the run's token stays out of the report
    assert held(wheels, "node2")["six-1.17.0-py2.py3-none-any.whl"] == b"six"
    assert not list(held_path(wheels, "node2").glob(".*.part"))
    distribution.close()


UV_SET = WheelSet(("--no-deps",), ("uv==0.13.9",), Sources(index_url="file:///mirror/simple"))


def test_an_optional_copy_this_machine_cannot_download_warns_and_the_task_goes_on(
        wheels: Path) -> None:
    here = Offline()
    distribution = Distribution(here=here)
    copy = {"fill": UV_SET, "optional": installer.WITHOUT_UV,
            "then": ("sh", "-c", "echo unpacked > \"$1/unpacked\"", "unpack", str(wheels))}
    for node in ("node1", "node2", "node3"):
        distribution.seed_for("set", "node1")
        held_path(wheels, node).mkdir(parents=True)  # a copy a killed run left
        session = LocalSession(node)
        apply(distribution, session, wheels, **copy)
        assert session.executed[-1] == INSTALL  # the task went on: the install uses pip
        assert not held_path(wheels, node).exists()  # no partial folder left
        assert distribution.warnings_for(node) == [
            f"uv {installer.UV_VERSION} could not be had, so pip installs here: this machine "
            "could not download uv==0.13.9 from file:///mirror/simple: No matching "
            "distribution found for uv==0.13.9"]
    assert here.attempts == 1  # one attempt for the run, not one per host
    assert not (wheels / "unpacked").exists()  # nothing after the copy ran for it


def test_without_optional_a_failed_download_fails_the_task(wheels: Path) -> None:
    distribution = Distribution(here=Offline())
    distribution.seed_for("set", "node1")
    with pytest.raises(HostError, match="^node1: torch: this machine could not download "
                                        "uv==0.13.9 from file:///mirror/simple: No matching"):
        apply(distribution, LocalSession("node1"), wheels, fill=UV_SET)


def test_an_optional_copy_whose_step_on_the_node_fails_warns_too(wheels: Path) -> None:
    distribution = Distribution()
    distribution.seed_for("set", "node1")
    session = LocalSession("node1")
    apply(distribution, session, wheels, optional=installer.WITHOUT_UV,
          then=("sh", "-c", "echo 'cannot write /var/cache' >&2; exit 1"))
    assert session.executed[-1] == INSTALL
    (warning,) = distribution.warnings_for("node1")
    assert warning.startswith(f"{installer.WITHOUT_UV}: ") and "cannot write" in warning
    assert not held_path(wheels, "node1").exists()
    distribution.close()


def test_an_install_that_fails_says_what_from_where_and_the_fix_in_one_short_line(
        tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text(
        "#!/bin/sh\necho 'Looking in indexes: https://ci:****@mirror.example/simple'\n"
        "echo 'ERROR: Could not find a version that satisfies the requirement "
        "torch==2.13.0+cpu (from versions: none)' >&2\n"
        "echo 'ERROR: No matching distribution found for torch==2.13.0+cpu at "
        "https://ci:s3cret@mirror.example/simple' >&2\nexit 1\n")
    (venv / "bin" / "python").chmod(0o755)
    origin = Origin(("--index-url", "https://ci:s3cret@mirror.example/simple"),
                    source="https://ci:***@mirror.example/simple",
                    hint="set pip_index_url or pip_find_links to an index the node reaches, or "
                         "wheelhouse: true")
    step = installer.install(str(venv), ["torch==2.13.0+cpu", "numpy"], origin, with_uv=False)
    with pytest.raises(InstallFailed) as failed:
        execute(cast(Session, LocalSession("node1")), Distribution(), "torch",
                [Run(("true",)), step])
    first, *details = str(failed.value).splitlines()
    assert first == ("node1: torch: could not install torch==2.13.0+cpu and 1 more from "
                     "https://ci:***@mirror.example/simple (set pip_index_url or "
                     "pip_find_links to an index the node reaches, or wheelhouse: true)")
    assert len(first) < 200
    assert details[-1] == ("  ERROR: No matching distribution found for torch==2.13.0+cpu at "
                           "https://ci:***@mirror.example/simple")
    assert "s3cret" not in str(failed.value)
