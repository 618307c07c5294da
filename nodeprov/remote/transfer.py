"""What travels beside the shell: files by SFTP (a large Write's content, an Upload), and the
Local actions that run on this machine.

    path = stage(connection, "node1", "hosts", Write("/etc/hosts", text))  # private, in /tmp
    upload(connection, Upload("wheels/", "/opt/wheels"))
    run_local("node1", "torch", Local(("pip", "download", "torch")), timeout=600)
"""

from __future__ import annotations

import secrets
import socket
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nodeprov.errors import CommandFailed, HostError
from nodeprov.remote.actions import Local, Upload, Write

if TYPE_CHECKING:
    from nodeprov.util.progress import Transfers


def stage(connection: Any, node: str, task: str, action: Write) -> str:
    """Put a large Write's content in a new private file on the node (SFTP, as the SSH user);
    the batch copies it into place as root and removes it."""
    remote = f"/tmp/.nodeprov-stage-{secrets.token_hex(16)}"
    try:
        with connection.sftp().open(remote, "wx") as staged:
            staged.chmod(0o600)
            staged.write(action.content.encode())
    except (OSError, EOFError) as error:
        raise HostError(node, task, f"staging {action} failed: {describe(error)}") from None
    return remote


def upload(connection: Any, action: Upload, progress: Transfers | None = None,
           node: str = "", what: str = "") -> None:
    """Send the file, or a directory's files; raises what paramiko raises. ``progress`` hears
    of ``node``'s transfer (``what``) after each file: bytes sent of the total."""
    local = Path(action.local_path)
    pairs = [(local, action.remote_path)]
    if local.is_dir():
        pairs = [(path, f"{action.remote_path}/{path.name}") for path in sorted(local.iterdir())
                 if path.is_file() and not path.name.startswith(".")]
    sizes = [source.stat().st_size for source, _ in pairs]
    advance = progress.start(node, what, sum(sizes)) if progress else None
    sent = 0
    try:
        for (source, remote), size in zip(pairs, sizes, strict=True):
            connection.put(str(source), remote)
            sent += size
            if advance:
                advance(sent, sum(sizes))
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
    """One line for a transport error (a socket timeout says nothing by itself)."""
    if isinstance(error, socket.timeout):
        return "timed out"
    return str(error) or type(error).__name__
