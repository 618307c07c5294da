"""How nodeprov talks SSH to every node of a run: host keys, timeouts, keepalives, locks.

    SshOptions(accept_new_host_keys=True, command_timeout=600)
"""

from __future__ import annotations

from dataclasses import dataclass

OUTPUT_LIMIT = 16 * 1024 * 1024  # characters a node may print per stream of one round trip


@dataclass(frozen=True)
class SshOptions:
    accept_new_host_keys: bool = False
    connect_timeout: float = 10.0
    command_timeout: float = 1800.0
    # like OpenSSH's ServerAliveInterval and ServerAliveCountMax
    keepalive_interval: float = 5.0
    keepalive_count_max: int = 3
    lock_timeout: float = 600.0  # how long an apply waits for another one on the same node
