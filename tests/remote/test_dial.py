"""dial: a connection sshd turns away (MaxStartups, a restart, a reset) is tried again with
backoff within the connect timeout; every failure is one line; no library traceback reaches
the terminal (issue #22 point 6)."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from paramiko.ssh_exception import SSHException

from nodeprov.errors import Unreachable
from nodeprov.inventory import Host
from nodeprov.remote import dial, hostkeys
from nodeprov.remote.hostkeys import SshFiles
from nodeprov.remote.options import SshOptions
from nodeprov.remote.proxycommand import ProxyCommandFailed
from nodeprov.remote.session import Session

HOST = Host(name="node1", address="127.0.0.1", node_address="127.0.0.1", port=2222)


def banner_error(cause: BaseException) -> SSHException:
    """What paramiko raises when the server closes before its banner."""
    try:
        try:
            raise cause
        except Exception as error:
            raise SSHException("Error reading SSH protocol banner" + str(error)) from None
    except SSHException as raised:
        raised.__context__ = cause
        return raised


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.pauses: list[float] = []

    def __call__(self) -> float:
        return self.now

    def pause(self, seconds: float) -> None:
        self.pauses.append(seconds)
        self.now += seconds


def attempts(monkeypatch: pytest.MonkeyPatch, outcomes: list[Any], clock: FakeClock,
             cost: float = 0.05) -> list[float]:
    """open_once raising or returning ``outcomes`` in turn; the timeouts it was given."""
    given: list[float] = []

    def open_once(host: Host, options: SshOptions, files: SshFiles, timeout: float) -> Any:
        given.append(timeout)
        clock.now += cost
        outcome = outcomes.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    monkeypatch.setattr(hostkeys, "open_once", open_once)
    return given


@pytest.mark.parametrize("turned_away", [
    banner_error(EOFError()), banner_error(ConnectionResetError(104, "reset")),
    ConnectionRefusedError(111, "refused"), ConnectionResetError(104, "reset"),
    ProxyCommandFailed("ssh -W %h:%p bastion", 255, "kex_exchange_identification: closed"),
])
def test_a_connection_turned_away_is_tried_again_with_growing_pauses(
        monkeypatch: pytest.MonkeyPatch, turned_away: BaseException) -> None:
    clock = FakeClock()
    given = attempts(monkeypatch, [turned_away] * 4 + ["connected"], clock)
    assert dial.connect(HOST, SshOptions(), SshFiles(), clock=clock,
                        pause=clock.pause) == "connected"
    assert len(given) == 5 and all(0.5 <= pause / base <= 1.0 for pause, base in
                                   zip(clock.pauses, (0.1, 0.2, 0.4, 0.8), strict=True))
    assert given[0] == 10.0 and given[-1] < 10.0  # each try gets what is left of the timeout


def test_tries_end_at_the_connect_timeout_with_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = FakeClock()
    given = attempts(monkeypatch, [banner_error(EOFError())] * 100, clock)
    with pytest.raises(Unreachable) as raised:
        dial.connect(HOST, SshOptions(connect_timeout=10), SshFiles(), clock=clock,
                     pause=clock.pause)
    assert clock.now <= 10.0 and 5 < len(given) < 20
    message = str(raised.value)
    assert message.startswith("node1: cannot connect to 127.0.0.1:2222: the connection was "
                              "closed before the SSH banner")
    assert f"{len(given)} tries in" in message and "MaxStartups" in message
    assert "\n" not in message and "Error reading SSH protocol banner" not in message


@pytest.mark.parametrize("final", [
    SSHException("Authentication failed."), banner_error(TimeoutError()),
    ProxyCommandFailed("nc -X 5 -x proxy %h %p", 127, "sh: 1: nc: not found"),
    Unreachable("node1", "", "unknown host key for 127.0.0.1 (SHA256:x)"),
])
def test_anything_else_is_final_at_once(monkeypatch: pytest.MonkeyPatch,
                                        final: BaseException) -> None:
    clock = FakeClock()
    given = attempts(monkeypatch, [final, "connected"], clock)
    with pytest.raises(Unreachable) as raised:
        dial.connect(HOST, SshOptions(), SshFiles(), clock=clock, pause=clock.pause)
    assert len(given) == 1 and clock.pauses == []
    assert "\n" not in str(raised.value)


@pytest.fixture
def closing_server() -> Iterator[int]:
    """A TCP server that turns every connection away as sshd past MaxStartups does."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)  # so that the loop sees stop: close() does not wake accept()
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                client, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            client.sendall(b"Exceeded MaxStartups\r\n")  # what sshd says before closing
            # Read what the client sent until it hangs up: closing with its banner unread
            # would send a reset instead of an end, and the test would see either by chance.
            client.shutdown(socket.SHUT_WR)
            client.settimeout(5)
            with contextlib.suppress(OSError):
                while client.recv(4096):
                    pass
            client.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    server.close()
    thread.join(5)


def test_no_library_traceback_reaches_the_terminal(
        closing_server: int, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "ssh_config").write_text("")
    host = Host(name="node1", address="127.0.0.1", node_address="127.0.0.1",
                port=closing_server, vars={"ssh_config_file": str(tmp_path / "ssh_config")})
    with pytest.raises(Unreachable, match="the connection was closed before the SSH banner; "):
        Session(host, SshOptions(connect_timeout=1.5)).open()
    captured = capfd.readouterr()
    assert captured.err == "" and captured.out == ""


@pytest.mark.parametrize(("command", "said"), [
    ("sh -c 'echo proxy says no >&2; exit 3'", "ProxyCommand \"sh -c 'echo proxy says no >&2; "
                                                "exit 3'\" exited 3: proxy says no"),
    ("/nonexistent/nodeprov-proxy %h", "ProxyCommand '/nonexistent/nodeprov-proxy 10.0.0.12' "
                                        "could not start: No such file or directory"),
    ("sh -c 'exec /nonexistent/nodeprov-proxy'", "exited 127"),
])
def test_a_failing_proxy_command_is_one_line_with_its_status_and_stderr(
        tmp_path: Path, capfd: pytest.CaptureFixture[str], command: str, said: str) -> None:
    (tmp_path / "ssh_config").write_text(f"Host *\n  ProxyCommand {command}\n")
    host = Host(name="node2", address="10.0.0.12", node_address="10.0.0.12",
                vars={"ssh_config_file": str(tmp_path / "ssh_config")})
    with pytest.raises(Unreachable) as raised:
        Session(host, SshOptions(connect_timeout=1)).open()
    assert said in str(raised.value) and "\n" not in str(raised.value)
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize(("cause", "said"), [
    (TimeoutError(), "no SSH banner in time"),
    (ConnectionResetError(104, "Connection reset by peer"),
     "the connection was reset before the SSH banner"),
    (EOFError(), "the connection was closed before the SSH banner"),
])
def test_a_banner_failure_names_its_cause(cause: BaseException, said: str) -> None:
    error = SSHException("Error reading SSH protocol banner")
    error.__context__ = cause  # as paramiko raises it, inside its except block
    assert dial.reason(error) == said
