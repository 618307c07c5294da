"""A ProxyCommand whose failure can be told: paramiko's spins on an empty read until its
timeout when the command ends (burning a core), then says only "Broken pipe".

    proxy = ProxyProcess.start("ssh -W 10.0.0.2:22 bastion")  # ProxyCommandFailed: no such
    proxy.exited()   # None while it runs; else ProxyCommandFailed: status and stderr's end
"""

from __future__ import annotations

import os
import select
import shlex
from typing import IO

from paramiko import ProxyCommand

from nodeprov.errors import NodeprovError


class ProxyCommandFailed(NodeprovError):
    """The ProxyCommand could not start (``code`` None), or ended by itself before the connection
    was made: its exit status and the end of its stderr (paramiko says only "Broken pipe")."""

    def __init__(self, command: str, code: int | None, said: str) -> None:
        tail = " ".join(said.strip().splitlines()[-2:])[-300:]
        what = "could not start" if code is None else f"exited {code}"
        super().__init__(f"ProxyCommand {command!r} {what}" + (f": {tail}" if tail else ""))
        self.code = code


class ProxyProcess(ProxyCommand):
    """paramiko's ProxyCommand, but the command's end reads as the end of the stream: paramiko's
    spins on empty reads until its timeout, burning a core meanwhile."""

    @classmethod
    def start(cls, command: str) -> ProxyProcess:
        if not shlex.split(command):  # paramiko would fail with "list index out of range"
            raise ProxyCommandFailed(command, None, "it is empty; give a command, or none")
        try:
            return cls(command)
        except OSError as error:  # no such program, not executable
            raise ProxyCommandFailed(command, None, error.strerror or str(error)) from None

    def recv(self, size: int) -> bytes:
        assert self.process.stdout is not None  # paramiko starts it with stdout=PIPE
        stdout = self.process.stdout.fileno()
        ready, _, _ = select.select([stdout], [], [], self.timeout)
        if not ready:
            raise TimeoutError()
        return os.read(stdout, size)  # b"" at the command's end: paramiko raises EOFError

    def exited(self) -> ProxyCommandFailed | None:
        """Why the command ended by itself; None while it runs."""
        if self.process.poll() is None:
            return None
        return ProxyCommandFailed(shlex.join(self.cmd), self.process.returncode,
                                  _written(self.process.stderr).decode(errors="replace"))


def _written(stream: IO[bytes] | None) -> bytes:
    """What waits in ``stream`` now, up to 64 KiB, without waiting for more (a child the
    command left running may hold it open)."""
    if stream is None:
        return b""
    os.set_blocking(stream.fileno(), False)
    try:
        return os.read(stream.fileno(), 65536)
    except BlockingIOError:
        return b""
