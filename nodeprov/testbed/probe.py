"""Is a node's sshd answering? A banner check for many at once, then real logins.

    await_banners(["10.77.3.2", "10.77.3.3"], timeout=20)   # raises naming the silent ones
    login_failures(ssh_config_path, ["node1", "node2"])    # {} when every key login works
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from nodeprov.errors import NodeprovError

RETRY_DELAY = 0.02


def banner(address: str, timeout: float = 1.0) -> bool:
    """True if something at ``address:22`` greets with an SSH banner within ``timeout``."""
    try:
        with socket.create_connection((address, 22), timeout=timeout) as connection:
            return connection.recv(64).startswith(b"SSH-")
    except OSError:
        return False


def _await_banner(address: str, deadline: float) -> bool:
    while time.monotonic() < deadline:
        if banner(address, timeout=max(0.1, min(1.0, deadline - time.monotonic()))):
            return True
        time.sleep(RETRY_DELAY)
    return False


def banners(addresses: Sequence[str], timeout: float = 1.0) -> list[bool]:
    """One banner check per address, all at once."""
    with ThreadPoolExecutor(max_workers=max(1, min(64, len(addresses)))) as pool:
        return list(pool.map(lambda address: banner(address, timeout), addresses))


def await_banners(addresses: Sequence[str], timeout: float) -> None:
    """Wait until every address greets with an SSH banner; raise naming those that never did."""
    deadline = time.monotonic() + timeout
    with ThreadPoolExecutor(max_workers=max(1, min(64, len(addresses)))) as pool:
        answered = list(pool.map(lambda address: _await_banner(address, deadline), addresses))
    silent = [address for address, ok in zip(addresses, answered, strict=True) if not ok]
    if silent:
        raise NodeprovError(f"testbed: no sshd answered on {', '.join(silent)}:22 within "
                            f"{timeout:.0f} s")


def login_failures(ssh_config: Path, names: Sequence[str]) -> dict[str, str]:
    """Run ``ssh -F ssh_config NAME true`` for every name at once; returns name -> error."""
    started = {name: subprocess.Popen(["ssh", "-F", str(ssh_config), name, "true"],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True)
               for name in names}
    failures = {}
    for name, process in started.items():
        output, _ = process.communicate()
        if process.returncode != 0:
            failures[name] = f"exit {process.returncode}: {output.strip()}"
    return failures
