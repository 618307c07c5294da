"""``converse``: a command on a channel of its own. Here the channel is a local ``sh`` behind
paramiko's Channel calls; on the testbed, ``nodeprov run --sync`` and the job go through it
(tests/userjob/test_run.py). Nothing reaches stdin before the command says its token (sudo's
password only, and once), bulk data goes in large writes, heartbeats keep coming until the
command ends, and what it said before the token is its error when it ends early."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from typing import Any

import pytest

from nodeprov.remote.channel import Terms, converse
from nodeprov.remote.sudo import SudoPrompt, SudoRefused

TOKEN = "0f0f0f0f0f0f0f0f"


class LocalChannel:
    """paramiko's Channel calls that ``converse`` makes, on ``sh -c COMMAND`` here."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.out, self.err = bytearray(), bytearray()
        self.readers: list[threading.Thread] = []
        self.writes: list[int] = []

    def exec_command(self, command: str) -> None:
        self.process = subprocess.Popen(["sh", "-c", command], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        start_new_session=True)
        for stream, into in ((self.process.stdout, self.out), (self.process.stderr, self.err)):
            reader = threading.Thread(target=self._read, args=(stream, into), daemon=True)
            reader.start()
            self.readers.append(reader)

    def _read(self, stream: Any, into: bytearray) -> None:
        for block in iter(lambda: os.read(stream.fileno(), 4096), b""):
            into.extend(block)

    def fileno(self) -> int:
        assert self.process is not None and self.process.stdout is not None
        return self.process.stdout.fileno()

    def recv_ready(self) -> bool:
        return bool(self.out)

    def recv_stderr_ready(self) -> bool:
        return bool(self.err)

    def recv(self, size: int) -> bytes:
        return self._take(self.out, size)

    def recv_stderr(self, size: int) -> bytes:
        return self._take(self.err, size)

    @staticmethod
    def _take(buffer: bytearray, size: int) -> bytes:
        taken = bytes(buffer[:size])
        del buffer[:size]
        return taken

    def sendall(self, data: bytes) -> None:
        assert self.process is not None and self.process.stdin is not None
        self.writes.append(len(data))
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def shutdown_write(self) -> None:
        assert self.process is not None and self.process.stdin is not None
        self.process.stdin.close()

    def exit_status_ready(self) -> bool:
        assert self.process is not None
        return self.process.poll() is not None and not any(r.is_alive() for r in self.readers)

    def recv_exit_status(self) -> int:
        assert self.process is not None
        return self.process.wait()

    def close(self) -> None:
        assert self.process is not None
        with contextlib.suppress(ProcessLookupError):  # sh and what it started
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        for reader in self.readers:
            reader.join(10)
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            # a heartbeat the ended command never read stays buffered: closing stdin flushes
            # it into the closed pipe (as a real channel, converse ignores what is left)
            if stream is not None and not stream.closed:
                with contextlib.suppress(BrokenPipeError):
                    stream.close()


class Transport:
    def __init__(self) -> None:
        self.channel = LocalChannel()

    def open_session(self) -> LocalChannel:
        return self.channel


def talk(command: str, *, password: str = "", prompt: str = "", **terms: Any
         ) -> tuple[Any, LocalChannel]:
    transport = Transport()
    return (converse(transport, command, TOKEN, Terms(**terms), password=password,
                     prompt=prompt), transport.channel)


# sudo -S as it behaves: the prompt on stderr, one line read from stdin as the password
SUDO_PROMPT = SudoPrompt.new().text
SUDO = f"printf %s '{SUDO_PROMPT}' >&2; read -r password; "


def test_bulk_data_goes_after_the_token_in_large_writes_and_sudo_gets_only_its_password(
        ) -> None:
    data = os.urandom(3 << 20)
    done, channel = talk(SUDO + 'echo "password=$password" >&2; echo ' + TOKEN + ' >&2; '
                         "wc -c; echo done >&2", password="Pw-7f3a", prompt=SUDO_PROMPT,
                         send=lambda write: [write(data[i:i + (1 << 20)])
                                             for i in range(0, len(data), 1 << 20)])
    assert done.exit_code == 0 and done.stdout.strip() == str(3 << 20)
    # what the command said before its token (sudo's prompt, its checks) stays out of stderr
    assert done.stderr == "done\n"
    assert channel.writes == [len("Pw-7f3a\n"), *([1 << 20] * 3)]


def test_a_password_asked_again_is_refused_and_nothing_else_is_sent() -> None:
    with pytest.raises(SudoRefused):
        talk(SUDO + SUDO + "cat", password="wrong", prompt=SUDO_PROMPT,
             send=lambda write: write(b"never"))


def test_a_command_that_ends_before_its_token_says_why() -> None:
    done, channel = talk("echo 'sh: 1: python3: not found' >&2; exit 127",
                         send=lambda write: write(b"never"))
    assert (done.exit_code, done.stdout, done.stderr) == (127, "", "sh: 1: python3: not found\n")
    assert channel.writes == []


def test_heartbeats_come_until_the_command_ends_and_output_is_echoed_as_it_comes() -> None:
    out = io.StringIO()
    # a UTF-8 character split between two writes is decoded whole
    done, channel = talk(f"echo {TOKEN} >&2; printf '\\303'; sleep 0.1; printf '\\251\\n'; "
                         "timeout 1.2 cat > /dev/null; echo bye", beat=0.2, out=out)
    assert done.exit_code == 0 and out.getvalue() == "é\nbye\n" == done.stdout
    assert len(channel.writes) >= 2 and set(channel.writes) == {1}  # every beat, one byte


def test_a_command_still_running_after_the_timeout_is_given_up() -> None:
    with pytest.raises(TimeoutError, match="still running after 0.5 s"):
        talk(f"echo {TOKEN} >&2; sleep 30", timeout=0.5)


def test_what_send_raises_ends_the_conversation() -> None:
    def interrupted(write: Callable[[bytes], None]) -> None:
        write(b"x" * 10)
        raise InterruptedError("interrupted")

    with pytest.raises(InterruptedError):
        talk(f"echo {TOKEN} >&2; cat > /dev/null", send=interrupted)


def test_a_command_that_ends_while_data_still_comes_says_why_not_the_broken_pipe() -> None:
    # the node refuses mid-stream (a folder someone made meanwhile): its words, not ours
    done, _ = talk(f"echo {TOKEN} >&2; head -c 10 > /dev/null; echo 'refused: a link' >&2; "
                   "exit 3", send=lambda write: [write(b"x" * (1 << 20)) for _ in range(64)])
    assert (done.exit_code, done.stderr) == (3, "refused: a link\n")


@pytest.mark.parametrize("sudo", ["", SUDO], ids=["no prompt (NOPASSWD)", "answered"])
def test_a_prompt_the_command_prints_right_after_its_token_is_never_answered(sudo: str) -> None:
    # the token and the command's first stderr in one read: a job running as root can print
    # the prompt (sudo's argv shows it); that is neither sudo asking nor a refusal
    done, channel = talk(sudo + f"printf '%s\\n%s' {TOKEN} '{SUDO_PROMPT}' >&2; "
                         'got=$(timeout 1 head -n 1); echo "stdin:[$got]"',
                         password="Pw-7f3a", prompt=SUDO_PROMPT)
    assert done.stdout == "stdin:[]\n" and done.stderr == SUDO_PROMPT
    assert channel.writes == ([len("Pw-7f3a\n")] if sudo else [])
