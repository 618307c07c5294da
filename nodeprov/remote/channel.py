"""A command on an SSH channel of its own, for what invoke's runner cannot do: send bulk data to
its stdin (invoke pumps one byte per 10 ms) or keep a heartbeat going while it runs.

    done = converse(transport, command, token, Terms(send=lambda write: write(data)))
    done = converse(transport, command, token, Terms(beat=5.0, out=log_out, err=log_err))
    done.exit_code, done.stdout, done.stderr

The command says ``token`` on a line of stderr once it runs (after sudo, whose prompt is
answered once with ``password``). The ``Terms`` say the rest: only once the token came does its
stdin carry anything, ``send``'s data in large writes (then EOF), or a byte every ``beat``
seconds until the command ends. Output goes to ``out``/``err`` as it comes, as UTF-8 text; the
last ``KEPT`` characters of each come back.
"""

from __future__ import annotations

import codecs
import contextlib
import select
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from nodeprov.remote.sudo import START_WAIT, SudoGate

KEPT = 1 << 20  # characters of each stream kept for the result (the full log is ``out``'s)
Send = Callable[[Callable[[bytes], None]], None]  # gets ``write``, calls it with each block


class Echo(Protocol):
    """Where output goes as it comes: a text file, or ``util.lines.LineWriter``."""

    def write(self, text: str, /) -> object: ...


@dataclass(frozen=True)
class Terms:
    """What a conversation carries besides the command, and how long it may take."""

    send: Send | None = None  # stdin: this data (then EOF) ...
    beat: float = 0.0  # ... else a byte every ``beat`` s until the command ends (0: none)
    out: Echo | None = None  # where stdout and stderr go as they come
    err: Echo | None = None
    timeout: float | None = None  # s it may run (None: no bound)


@dataclass(frozen=True)
class Conversation:
    exit_code: int  # -1: none came (the connection went away)
    stdout: str
    stderr: str


class _Output:
    """One output stream: decoded as it comes, echoed, its tail kept."""

    def __init__(self, echo: Echo | None) -> None:
        self.echo = echo
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.kept = ""

    def feed(self, data: bytes, final: bool = False) -> None:
        text = self.decoder.decode(data, final)
        if text and self.echo is not None:
            self.echo.write(text)
        self.kept = (self.kept + text)[-KEPT:]


def converse(transport: Any, command: str, token: str, terms: Terms = Terms(), *,
             password: str = "", prompt: str = "") -> Conversation:
    """Run ``command`` on a new channel of ``transport`` (see the module docstring); the channel
    is closed on the way out, whatever happens. Raises SudoRefused, TimeoutError (not started
    within START_WAIT s, or still running after the terms' ``timeout`` s), what ``send``
    raised; transport errors propagate."""
    channel = transport.open_session()
    try:
        channel.exec_command(command)
        return _Talk(channel, token, password, prompt, _Output(terms.out),
                     _Output(terms.err)).run(terms.send, terms.beat, terms.timeout)
    finally:
        channel.close()


def _closed(error: BaseException) -> bool:
    """A write that failed because the command ended (its exit status and words tell more)."""
    return isinstance(error, (OSError, EOFError)) and not isinstance(error, InterruptedError)


class _Talk:
    def __init__(self, channel: Any, token: str, password: str, prompt: str, out: _Output,
                 err: _Output) -> None:
        self.channel, self.out, self.err = channel, out, err
        self.ready, self.prompt = f"{token}\n".encode(), prompt.encode()
        self.early: bytes | None = b""  # stderr before the token; None once it came
        self.gate = SudoGate(prompt, password, mark=f"{token}\n")
        self.failed: list[BaseException] = []

    def run(self, send: Send | None, beat: float, timeout: float | None) -> Conversation:
        started = last_beat = time.monotonic()
        sending: threading.Thread | None = None
        while True:
            # the channel wakes select on output and on its end; a running job only needs
            # its next heartbeat
            idle = 0.2 if self.early is not None or not beat else min(1.0, beat)
            select.select([self.channel], [], [], idle)
            self._read_stderr()
            while self.channel.recv_ready():
                self.out.feed(self.channel.recv(65536))
            if self.failed and not _closed(self.failed[0]):
                raise self.failed[0]
            now = time.monotonic()
            if self.early is None and send is not None and sending is None:
                sending = threading.Thread(target=self._send, args=(send,), daemon=True,
                                           name="nodeprov send")
                sending.start()
            if self.early is None and beat and send is None and now - last_beat >= beat:
                last_beat = now
                self._beat()
            if self.channel.exit_status_ready() and not (
                    self.channel.recv_ready() or self.channel.recv_stderr_ready()):
                break
            if self.early is not None and now - started > START_WAIT:
                raise TimeoutError(f"it did not start within {START_WAIT:g} s")
            if timeout is not None and now - started > timeout:
                raise TimeoutError(f"still running after {timeout:g} s")
        if sending is not None:
            sending.join(5)
        if self.failed and not (_closed(self.failed[0]) and self.channel.recv_exit_status() >= 0):
            raise self.failed[0]  # not the channel closed by a command that said why it ended
        if self.early is not None:  # it ended before it said the token (no python3, sudo)
            self.err.feed(self.early.replace(self.prompt, b"") if self.prompt else self.early)
        self.out.feed(b"", final=True)
        self.err.feed(b"", final=True)
        return Conversation(self.channel.recv_exit_status(), self.out.kept, self.err.kept)

    def _read_stderr(self) -> None:
        while self.channel.recv_stderr_ready():
            chunk = self.channel.recv_stderr(65536)
            if self.early is None:
                self.err.feed(chunk)
                continue
            self.early += chunk
            # sudo's prompts are those before the token: what follows it in the same chunk is
            # the command's own stderr, never answered (latin-1: every byte one character)
            typed = self.gate.reply(self.early.decode("latin-1"))
            if typed:
                self.channel.sendall(typed.encode())
            _, ready, rest = self.early.partition(self.ready)
            if ready:
                self.early = None
                self.err.feed(rest)

    def _beat(self) -> None:
        with contextlib.suppress(OSError):  # closing: its exit status says how it ended
            self.channel.sendall(b".")

    def _send(self, send: Send) -> None:
        try:
            send(self.channel.sendall)
            self.channel.shutdown_write()
        except BaseException as error:  # the conversation raises it
            self.failed.append(error)
