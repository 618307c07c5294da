"""What travels beside the shell: files by SFTP (a large Write's content, an Upload), and the
Local actions that run on this machine.

    path = stage(connection, "node1", "hosts", Write("/etc/hosts", text))  # private, in /tmp
    upload(connection, Upload("wheels/", "/opt/wheels"))
    run_local("node1", "torch", Local(("pip", "download", "torch")), timeout=600)
"""

from __future__ import annotations

import secrets
import socket
import stat
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from paramiko import SFTPAttributes, SFTPClient, SFTPError, SFTPFile
from paramiko.sftp import CMD_HANDLE, CMD_OPEN, SFTP_FLAG_CREATE, SFTP_FLAG_EXCL, SFTP_FLAG_WRITE

from nodeprov.errors import CommandFailed, HostError
from nodeprov.remote.actions import Local, Upload, Write

if TYPE_CHECKING:
    from nodeprov.util.progress import Transfers


def stage(connection: Any, node: str, task: str, action: Write) -> str:
    """Put a large Write's content in a new private file on the node (SFTP, as the SSH user);
    the batch copies it into place as root and removes it."""
    remote = f"/tmp/.nodeprov-stage-{secrets.token_hex(16)}"
    try:
        with create_private(connection.sftp(), remote) as staged:
            staged.write(action.content.encode())
    except (OSError, EOFError) as error:
        raise HostError(node, task, f"staging {action} failed: {describe(error)}") from None
    return remote


def create_private(sftp: SFTPClient, path: str) -> SFTPFile:
    """A new file at ``path`` (never an existing one, nor through a link), open for writing
    and 0600 from its creation: the mode travels in the SFTP open request, as OpenSSH's
    sftp-server takes it for open(2). paramiko's own open sends no mode, so the file was born
    0666 & ~umask and chmod came a round trip later: another user read HF_TOKEN (issue #34)."""
    attributes = SFTPAttributes()
    attributes.st_mode = 0o600
    flags = SFTP_FLAG_WRITE | SFTP_FLAG_CREATE | SFTP_FLAG_EXCL
    kind, answer = sftp._request(CMD_OPEN, path, flags, attributes)  # type: ignore[attr-defined]
    if kind != CMD_HANDLE:
        raise SFTPError("Expected handle")
    return SFTPFile(sftp, answer.get_binary(), "wb")


def upload(connection: Any, action: Upload, progress: Transfers | None = None,
           node: str = "", what: str = "") -> None:
    """Send the file, or a directory's files, each with its local mode (as Fabric's put keeps
    it); raises what paramiko raises. ``progress`` hears of ``node``'s transfer (``what``) as
    the bytes go: paramiko's callback, every 32 KiB, so a 900 MB wheel's bar moves too."""
    local = Path(action.local_path)
    pairs = [(local, action.remote_path)]
    if local.is_dir():
        pairs = [(path, f"{action.remote_path}/{path.name}") for path in sorted(local.iterdir())
                 if path.is_file() and not path.name.startswith(".")]
    sizes = [source.stat().st_size for source, _ in pairs]
    total = sum(sizes)
    advance = progress.start(node, what, total) if progress else None
    sent = 0
    try:
        sftp = connection.sftp()
        for (source, remote), size in zip(pairs, sizes, strict=True):
            told = (lambda done, _, before=sent: advance(before + done, total)) if advance else None
            sftp.put(str(source), remote, callback=told)
            sftp.chmod(remote, stat.S_IMODE(source.stat().st_mode))
            sent += size
    except BaseException:
        if progress:
            progress.end(node, failed=True)
        raise
    if progress:
        progress.end(node)


def run_local(node: str, task: str, action: Local, timeout: float) -> None:
    try:
        result = subprocess.run(action.argv, capture_output=True, text=True, check=False,
                                timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise HostError(node, task, f"{action} failed: {describe(error)}") from None
    if result.returncode != 0:
        raise CommandFailed(node, task, str(action), result.returncode,
                            result.stderr or result.stdout,
                            hint="this ran on this machine, not on the node")


def describe(error: BaseException) -> str:
    """One line for a transport error: a socket timeout says nothing by itself, and invoke's
    ThreadException spells out its threads' tracebacks (the first one's error is the line).

    >>> describe(OSError("Socket is closed\\nTraceback (most recent call last): ..."))
    'Socket is closed'
    """
    inner = getattr(error, "exceptions", None)  # invoke's ThreadException
    if inner and isinstance(getattr(inner[0], "value", None), BaseException):
        return describe(inner[0].value)
    if isinstance(error, socket.timeout):
        return "timed out"
    return (str(error).strip().splitlines() or [type(error).__name__])[0]
