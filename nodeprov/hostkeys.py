"""Opening Fabric connections with OpenSSH's host-key rules instead of Fabric's trust-all.

Fabric's default policy silently trusts unknown host keys. nodeprov refuses them unless
``--accept-new-host-keys`` (then records them, like ssh's ``accept-new``); a key that differs
from the recorded one is always refused (paramiko raises BadHostKeyException).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabric import Config, Connection
from paramiko import MissingHostKeyPolicy, SSHClient
from paramiko.pkey import PKey

from nodeprov.errors import Unreachable
from nodeprov.inventory import Host

if TYPE_CHECKING:
    from nodeprov.session import SshOptions

# Several hosts' threads may record new keys at once; appends to one file must not interleave.
_RECORD_LOCK = threading.Lock()


class UnknownHostKey(Exception):
    pass


class OpenSshPolicy(MissingHostKeyPolicy):
    """Refuse unknown keys, or accept and append them to ``record_to`` (accept-new)."""

    def __init__(self, accept_new: bool, record_to: Path) -> None:
        self.accept_new = accept_new
        self.record_to = record_to

    def missing_host_key(self, client: SSHClient, hostname: str, key: PKey) -> None:
        fingerprint = key.fingerprint
        if not self.accept_new:
            raise UnknownHostKey(
                f"unknown host key for {hostname} ({fingerprint}); check it and run again with "
                f"--accept-new-host-keys, or add it to {self.record_to}")
        client.get_host_keys().add(hostname, key.get_name(), key)
        with _RECORD_LOCK:
            self.record_to.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            with self.record_to.open("a") as known_hosts:
                known_hosts.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")


def known_hosts_files(ssh_config: Any) -> list[Path]:
    """The files OpenSSH would read: the ssh_config's UserKnownHostsFile, else ~/.ssh's."""
    configured = ssh_config.get("userknownhostsfile", "~/.ssh/known_hosts ~/.ssh/known_hosts2")
    return [Path(os.path.expanduser(path)) for path in configured.split()]


def connect(host: Host, options: SshOptions) -> Any:
    """An open Fabric Connection to ``host`` honouring its ssh_config and known_hosts."""
    ssh_config_file = host.vars.get("ssh_config_file")
    config = Config(runtime_ssh_path=ssh_config_file) if ssh_config_file else Config()
    config.load_ssh_config()
    connect_kwargs: dict[str, Any] = {"banner_timeout": options.connect_timeout,
                                      "auth_timeout": options.connect_timeout}
    if host.key_file:
        connect_kwargs.update(key_filename=[host.key_file], look_for_keys=False)
    connection = Connection(host.address, user=host.user, port=host.port, config=config,
                            connect_timeout=int(options.connect_timeout),
                            connect_kwargs=connect_kwargs)
    known = known_hosts_files(connection.ssh_config)
    for path in known:
        if path.exists():
            connection.client.load_host_keys(str(path))
    connection.client.set_missing_host_key_policy(
        OpenSshPolicy(options.accept_new_host_keys, known[0]))
    try:
        connection.open()
    except UnknownHostKey as error:
        raise Unreachable(host.name, "", str(error)) from None
    except Exception as error:
        if type(error).__name__ == "BadHostKeyException":
            raise Unreachable(host.name, "", f"host key for {host.address} CHANGED (expected "
                              f"{error.expected_key.fingerprint}, got "  # type: ignore[attr-defined]
                              f"{error.key.fingerprint}); refusing to connect",  # type: ignore[attr-defined]
                              hint="if the node was reinstalled, remove its old line from "
                              "known_hosts") from None
        raise
    connection.transport.set_keepalive(15)
    return connection
