"""The run lock's holder script, run by a local sh with its lock files under tmp_path: held
until EOF or a silence, busy naming its holder, waiting for a running batch. The keepalive
watchdog with fake transports: silent nodes found, a busy machine tolerated, no traceback."""

from __future__ import annotations

import itertools
import os
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from nodeprov.errors import HostError
from nodeprov.remote.nodelock import (
    LOCK_DIR,
    LOCK_PATH,
    RUN_LOCK,
    STATE_DIR,
    RunLock,
    holder_argv,
    keepalive,
    under_batch_lock,
    unread_bytes,
)

READ = "printf '\\n@@%s end\\n' \"$1\"\n"  # stands in for the facts


def moved(argv: list[str], tmp_path: Path) -> list[str]:
    """``argv`` with the node's lock folder and state folder moved under tmp_path."""
    return [arg.replace(LOCK_DIR, str(tmp_path / "run" / "nodeprov"))
            .replace(STATE_DIR, str(tmp_path / "state")) for arg in argv]


def holder(tmp_path: Path, wait: float = 0, quiet: float = 30) -> subprocess.Popen[str]:
    """The holder as it runs on a node, stdin open (the channel); paths moved under tmp."""
    (tmp_path / "run").mkdir(exist_ok=True)
    return subprocess.Popen(moved(holder_argv(READ, "T", wait, quiet), tmp_path),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def run_lock(tmp_path: Path) -> Path:
    return tmp_path / "run" / "nodeprov" / Path(RUN_LOCK).name


def batch_lock(tmp_path: Path) -> Path:
    return tmp_path / "run" / "nodeprov" / Path(LOCK_PATH).name


def free(lock: Path) -> bool:
    return subprocess.run(["flock", "-n", str(lock), "true"], check=False).returncode == 0


def test_held_until_the_channel_closes(tmp_path: Path) -> None:
    with holder(tmp_path) as process:
        assert process.stdout is not None and process.stdin is not None
        assert [process.stdout.readline() for _ in range(4)] == ["started\n", "held\n", "\n",
                                                                  "@@T end\n"]
        process.stdin.write(".")  # a heartbeat
        process.stdin.flush()
        time.sleep(0.3)
        assert process.poll() is None and not free(run_lock(tmp_path))
        assert run_lock(tmp_path).read_text().startswith("pid ")
        process.stdin.close()
        assert process.wait(timeout=10) == 0 and free(run_lock(tmp_path))
    assert run_lock(tmp_path).parent.stat().st_mode & 0o7777 == 0o700


def test_held_until_the_heartbeats_stop(tmp_path: Path) -> None:
    with holder(tmp_path, quiet=1) as process:
        assert process.wait(timeout=10) == 0  # stdin still open, no heartbeat for 1 s
        assert free(run_lock(tmp_path))


def test_busy_names_the_holder_and_reads_anyway(tmp_path: Path) -> None:
    lock = run_lock(tmp_path)
    lock.parent.mkdir(parents=True, mode=0o700)
    lock.write_text("pid 42 since then from 10.9.9.9\n")
    with subprocess.Popen(["flock", str(lock), "sleep", "30"]) as other:
        try:
            time.sleep(0.3)
            with holder(tmp_path) as process:
                output = process.communicate(timeout=10)[0]
        finally:
            other.kill()
    assert output == ("started\nbusy: another nodeprov run holds this node (pid 42 since then "
                      "from 10.9.9.9)\n\n@@T end\n")


def test_waits_for_a_running_batch_and_frees_the_run_lock_when_busy(tmp_path: Path) -> None:
    batches = batch_lock(tmp_path)
    batches.parent.mkdir(parents=True, mode=0o700)
    with subprocess.Popen(["flock", str(batches), "sleep", "1"]) as batch:
        time.sleep(0.3)
        with holder(tmp_path) as process:
            busy = process.communicate(timeout=10)[0]
        assert busy.startswith("started\nbusy: a command of an interrupted nodeprov run still")
        assert free(run_lock(tmp_path))
        with holder(tmp_path, wait=10) as process:  # the batch ends within 1 s
            output = process.communicate(input="", timeout=10)[0]
        batch.wait()
    assert output == "started\nheld\n\n@@T end\n" and process.returncode == 0
    assert free(batches)


# --- the lock folder (issue #23 point 4) -----------------------------------------------------

def test_the_locks_live_in_a_folder_of_roots_own_with_mode_0700() -> None:
    assert LOCK_DIR == "/run/nodeprov"
    assert {str(Path(path).parent) for path in (RUN_LOCK, LOCK_PATH)} == {LOCK_DIR}


@pytest.mark.parametrize("planted", ["run", "batch"])
def test_a_symlink_planted_as_a_lock_is_refused_and_its_target_untouched(
        tmp_path: Path, planted: str) -> None:
    target = tmp_path / "root-only-file"
    target.write_text("secret\n")
    link = run_lock(tmp_path) if planted == "run" else batch_lock(tmp_path)
    link.parent.mkdir(parents=True, mode=0o700)
    link.symlink_to(target)
    with holder(tmp_path) as process:
        out, err = process.communicate(input="", timeout=10)
    assert process.returncode == 1 and out == "started\n"
    assert f"{link} is a symlink: remove it" in err
    batch = subprocess.run(moved(under_batch_lock(["touch", str(tmp_path / "ran")]), tmp_path),
                           capture_output=True, text=True, check=False)
    assert (batch.returncode == 1) == (planted == "batch") == (not (tmp_path / "ran").exists())
    assert target.read_text() == "secret\n"


@pytest.mark.parametrize("folder", ["symlink", "other owner", "file"])
def test_a_lock_folder_not_of_roots_own_is_refused(tmp_path: Path, folder: str) -> None:
    where = run_lock(tmp_path).parent
    where.parent.mkdir()
    if folder == "symlink":
        (tmp_path / "elsewhere").mkdir(mode=0o777)
        where.symlink_to(tmp_path / "elsewhere")
    elif folder == "other owner":
        where.mkdir(mode=0o777)
        os.chown(where, 65534, 65534)
    else:
        where.write_text("")
    with holder(tmp_path) as process:
        _, err = process.communicate(input="", timeout=10)
    assert process.returncode == 1 and "is not a folder of root's own" in err
    assert not (tmp_path / "elsewhere" / "run.lock").exists()


class BusyChannel:
    """The holder's channel on a node whose run lock another run holds, with ``holder`` text."""

    def __init__(self, holder: str) -> None:
        self.output = f"started\nbusy: another nodeprov run holds this node ({holder})\n".encode()
        self.exit_status = 0

    def exec_command(self, command: str) -> None:
        pass

    def settimeout(self, seconds: float | None) -> None:
        pass

    def recv_stderr_ready(self) -> bool:
        return False

    def recv(self, size: int) -> bytes:
        chunk, self.output = self.output, b"@@T end\n" if self.output else b""
        return chunk

    def close(self) -> None:
        pass


def test_the_held_by_text_is_shown_escaped() -> None:
    channel = BusyChannel("pid 1 \x1b]0;owned\x07\x1b[2J\x9b31m")
    transport = type("T", (), {"open_session": lambda self: channel})()
    with pytest.raises(HostError) as raised:
        RunLock("node1").take(transport, "sh", "T", 5, password="", prompt="[sudo]",
                              lost=lambda: False)
    shown = str(raised.value)
    assert "\\x1b]0;owned\\x07\\x1b[2J\\x9b31m" in shown
    assert not any(raw in shown for raw in ("\x1b", "\x07", "\x9b"))


class ClosedChannel:
    """A paramiko channel the node closed: send_ready() is True, send() raises."""

    def send_ready(self) -> bool:
        return True

    def send(self, data: bytes) -> int:
        raise OSError("Socket is closed")

    def close(self) -> None:
        pass


def test_a_heartbeat_to_a_closed_channel_lets_the_lock_go_without_raising() -> None:
    lock = RunLock("node1")
    lock._channel = ClosedChannel()
    lock.beat()
    assert not lock.held
    lock.beat()  # and stays quiet


class Transport:
    """A transport whose keepalive replies come after ``delay`` s (None: never), or raise."""

    def __init__(self, delay: float | None = 0.0, error: Exception | None = None) -> None:
        self.delay, self.error, self.requests = delay, error, 0
        self.sock: object = None
        self.closed = threading.Event()

    def global_request(self, kind: str) -> None:
        self.requests += 1
        if self.error is not None:
            raise self.error
        self.closed.wait(self.delay)


def run_keepalive(transport: Transport, seconds: float, beat: Callable[[], None] = lambda: None,
                  clock: Callable[[], float] = time.monotonic) -> list[str]:
    """keepalive (every 0.01 s, 3 missed) in a thread for ``seconds``: what it called silent."""
    silent: list[str] = []
    stop = threading.Event()
    thread = threading.Thread(target=keepalive, args=(transport, 0.01, 3, stop, beat,
                                                      silent.append), kwargs={"clock": clock})
    thread.start()
    time.sleep(seconds)
    stop.set()
    transport.closed.set()
    thread.join(5)
    assert not thread.is_alive()
    return silent


@pytest.fixture
def thread_errors(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Exceptions that ended a thread (what would print a traceback)."""
    errors: list[str] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: errors.append(repr(args.exc_value)))
    return errors


def test_a_node_that_stops_answering_is_called_silent(thread_errors: list[str]) -> None:
    assert run_keepalive(Transport(delay=None), 0.5) == [
        "the node answered no SSH keepalive for 0.03 s"]
    assert thread_errors == []


def test_a_node_that_answers_is_never_called_silent() -> None:
    transport = Transport(delay=0.0)
    assert run_keepalive(transport, 0.3) == [] and transport.requests > 3


def test_intervals_this_machine_woke_late_for_do_not_count() -> None:
    ticks = itertools.count(step=1.0)  # every wake-up 1 s after the last: 100 intervals late
    assert run_keepalive(Transport(delay=None), 0.3, clock=lambda: next(ticks)) == []


def test_a_reply_waiting_unread_in_the_socket_is_an_answer() -> None:
    transport = Transport(delay=None)
    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.send(b"reply")
        transport.sock = ours
        assert unread_bytes(transport) == 5
        assert run_keepalive(transport, 0.3) == []


def test_a_closed_connection_ends_the_threads_quietly(thread_errors: list[str]) -> None:
    lock = RunLock("node1")
    lock._channel = ClosedChannel()
    transport = Transport(error=OSError("Socket is closed"))
    assert run_keepalive(transport, 0.2, beat=lock.beat) == []
    assert transport.requests > 3 and thread_errors == [] and not lock.held
