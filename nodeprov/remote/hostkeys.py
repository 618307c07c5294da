"""Opening Fabric connections with OpenSSH's host-key rules instead of Fabric's trust-all.

Fabric's default policy silently trusts unknown host keys. nodeprov refuses them unless
``--accept-new-host-keys`` (then records them, like ssh's ``accept-new``); a key that differs
from the recorded one is always refused (paramiko raises BadHostKeyException). The same holds
for every jump host: nodeprov builds the ProxyJump chain itself (Fabric's own chain trusts any
key), from ``Host.proxy_jump`` or ssh_config's ProxyJump; a ProxyCommand (``Host.proxy_command``
or ssh_config's) runs only when connecting, and the final host's key is checked through it.

A ProxyCommand that fails is said in one line with its exit status and stderr
(``ProxyCommandFailed``); ``dial.connect`` tries again where sshd turned a connection away.

The connections of one run share one ``SshFiles``, so each ssh_config and known_hosts file is
read once per run, not once per host:

    files = SshFiles(inventory.ssh_configs)
    connection = open_once(host, SshOptions(), files, timeout=10)
"""

from __future__ import annotations

import errno
import os
import subprocess
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabric import Config, Connection
from paramiko import HostKeys, MissingHostKeyPolicy, ProxyCommand, SSHClient, SSHConfig
from paramiko.pkey import PKey

from nodeprov.errors import NodeprovError, Unreachable
from nodeprov.inventory.sshconfigs import SshConfigs
from nodeprov.remote.capture import BoundedRemote
from nodeprov.remote.proxycommand import ProxyCommandFailed, ProxyProcess
from nodeprov.util import validate

if TYPE_CHECKING:
    from nodeprov.inventory.model import Host
    from nodeprov.remote.options import SshOptions


class UnknownHostKey(NodeprovError):
    """The host's key is not in known_hosts and new keys were not to be accepted."""


class SshFiles:
    """A run's ssh_config files (parsed) and known_hosts files, each read once and
    shared by the run's connections, from any thread. A key recorded under accept-new is known
    to the run's later connections, as it is to ssh's."""

    def __init__(self, ssh_configs: SshConfigs | None = None) -> None:
        self._ssh_configs = ssh_configs or SshConfigs()
        self._parsed: dict[str, SSHConfig] = {}  # read only: lookups do not change it
        self._known: dict[Path, HostKeys] = {}
        self._lock = threading.Lock()

    def config(self, ssh_config_file: str | None) -> Config:
        """A new Fabric Config over the once-parsed ``ssh_config_file``; without one, over what
        Fabric reads by default (~/.ssh/config and /etc/ssh/ssh_config). A Config per connection:
        Fabric writes to its Config, and a shared one fails other threads' reads meanwhile.
        Its runner lets watchers see stderr only (the sudo password's, remote.sudo)."""
        with self._lock:
            key = ssh_config_file or ""
            if key not in self._parsed:
                self._parsed[key] = self._parse(ssh_config_file)
            return Config(ssh_config=self._parsed[key],
                          overrides={"runners": {"remote": BoundedRemote}})

    def _parse(self, ssh_config_file: str | None) -> SSHConfig:
        if not ssh_config_file:
            default: SSHConfig = Config().base_ssh_config
            return default
        parsed = self._ssh_configs.parsed(ssh_config_file)
        if parsed is None:  # as Fabric says it for a missing runtime ssh_config
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), ssh_config_file)
        return parsed

    def trust(self, connection: Any, given: tuple[str, ...] | None = None) -> Path:
        """Give the connection's client the recorded keys of its host, from the known_hosts
        files ``given`` (ssh arguments' UserKnownHostsFile) or its ssh_config names; returns
        the file a new key is recorded in."""
        paths = (list(map(_known_hosts_path, given)) if given
                 else known_hosts_files(connection.ssh_config))
        name = _known_hosts_name(connection.host, connection.port)
        keys: dict[str, PKey] = {}
        with self._lock:
            for path in paths:
                # the first key of a type wins, as when every file is loaded into one client
                for key_type, key in (self._read(path).lookup(name) or {}).items():
                    keys.setdefault(key_type, key)
        for key_type, key in keys.items():
            connection.client.get_host_keys().add(name, key_type, key)
        return paths[0]

    def record(self, path: Path, hostname: str, key: PKey) -> None:
        """Append a newly trusted key to ``path``, for this run's later connections too."""
        with self._lock:
            known = self._read(path)
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            with path.open("a") as known_hosts:
                known_hosts.write(f"{hostname} {key.get_name()} {key.get_base64()}\n")
            known.add(hostname, key.get_name(), key)

    def _read(self, path: Path) -> HostKeys:
        if path not in self._known:
            known = HostKeys()
            if path.exists():
                known.load(str(path))
            self._known[path] = known
        return self._known[path]


class OpenSshPolicy(MissingHostKeyPolicy):
    """Refuse unknown keys, or accept and append them to ``record_to`` (accept-new)."""

    def __init__(self, accept_new: bool, record_to: Path, files: SshFiles) -> None:
        self.accept_new = accept_new
        self.record_to = record_to
        self.files = files

    def missing_host_key(self, client: SSHClient, hostname: str, key: PKey) -> None:
        if not self.accept_new:
            raise UnknownHostKey(
                f"unknown host key for {hostname} ({key.fingerprint}); check it and run again "
                f"with --accept-new-host-keys, or add it to {self.record_to}")
        client.get_host_keys().add(hostname, key.get_name(), key)
        self.files.record(self.record_to, hostname, key)


def known_hosts_files(ssh_config: Any) -> list[Path]:
    """The files OpenSSH would read: the ssh_config's UserKnownHostsFile, else ~/.ssh's."""
    configured = ssh_config.get("userknownhostsfile", "~/.ssh/known_hosts ~/.ssh/known_hosts2")
    return list(map(_known_hosts_path, configured.split()))


def _known_hosts_path(text: str) -> Path:
    """A UserKnownHostsFile entry: ``none`` is no file, as for ssh (a file named none in the
    current folder was written)."""
    return Path(os.devnull if text.lower() == "none" else os.path.expanduser(text))


def _known_hosts_name(address: str, port: int) -> str:
    """The name paramiko checks a server's key under: ``address``, or ``[address]:port``."""
    return address if port == 22 else f"[{address}]:{port}"


class _Connection(Connection):  # type: ignore[misc]
    """A Connection that closes its jump hosts and reaps its ProxyCommand with itself (Fabric's
    leaves them open, paramiko's ProxyCommand only signals its process), also after a refused
    host key (Fabric's close does nothing then)."""

    def open_gateway(self) -> Any:
        if not isinstance(self.gateway, str):
            return super().open_gateway()
        # as Fabric does: a one-host ssh_config expands %h, %p and the other tokens
        config = SSHConfig.from_text(f"Host {self.host}\n    ProxyCommand {self.gateway}")
        return ProxyProcess.start(config.lookup(self.host)["proxycommand"])

    def proxy_exited(self) -> ProxyCommandFailed | None:
        """Why the ProxyCommand ended by itself, if it did (before ``close`` ends it)."""
        proxy = getattr(self.client.get_transport(), "sock", None)
        return proxy.exited() if isinstance(proxy, ProxyProcess) else None

    def close(self) -> None:
        transport = self.client.get_transport()
        proxy = getattr(transport, "sock", None)
        super().close()
        self.client.close()
        if isinstance(proxy, ProxyCommand):
            if transport is not None:  # its thread closes (signals) the command as it ends
                transport.join(timeout=5)
            try:
                proxy.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proxy.process.kill()
                proxy.process.wait()
            for stream in (proxy.process.stdin, proxy.process.stdout, proxy.process.stderr):
                if stream is not None:
                    stream.close()
        if isinstance(self.gateway, Connection):
            self.gateway.close()


def jump_hops(spec: str) -> list[tuple[str | None, str, int | None]]:
    """(user, address, port) of each hop of a ProxyJump spec, first hop first.

    >>> jump_hops("bastion, alice@10.0.0.1:2222,[fd00::1]:22")
    [(None, 'bastion', None), ('alice', '10.0.0.1', 2222), (None, 'fd00::1', 22)]
    """
    hops = []
    for hop in spec.split(","):
        user, _, rest = hop.strip().rpartition("@")
        if rest.startswith("["):
            address, _, port = rest[1:].partition("]")
            port = port.removeprefix(":")
        else:
            address, _, port = rest.partition(":") if rest.count(":") == 1 else (rest, "", "")
        try:
            hops.append((validate.user_name(user) if user else None, validate.address(address),
                         validate.port(port) if port else None))
        except ValueError as error:
            raise ValueError(f"ProxyJump {spec!r}: {error}; expected [user@]host[:port], "
                             "comma-separated") from None
    return hops


def prepare(host: Host, options: SshOptions, files: SshFiles,
            timeout: float | None = None) -> Any:
    """``host``'s Fabric Connection, not yet open: its ssh_config applied, its recorded keys
    loaded, an unknown key refused or recorded as ``options`` say; through its jump hosts
    (each checked the same way) or its ProxyCommand. Each step waits ``timeout`` s at most
    (default: the connect timeout)."""
    address = validate.address(host.address)  # again where used: a ProxyCommand's %h
    timeout = timeout or host.timeout or options.connect_timeout
    connect_kwargs: dict[str, Any] = {"banner_timeout": timeout, "auth_timeout": timeout}
    if host.key_file:
        connect_kwargs.update(key_filename=[host.key_file], look_for_keys=False)
    config = files.config(host.vars.get("ssh_config_file"))
    settings = config.base_ssh_config.lookup(address)
    gateway: Any = False  # False, not None: Fabric would build its unchecked chain itself
    # the inventory's hop (its "none" too) keeps ssh_config's out, as ssh takes the first
    # ProxyJump or ProxyCommand it reads, and the command line before the files
    given = host.proxy_jump or host.proxy_command
    # (paramiko's lookup gives ProxyCommand none as None)
    jump = host.proxy_jump or (None if given else settings.get("proxyjump")) or "none"
    command = host.proxy_command or (None if given else settings.get("proxycommand")) or "none"
    if jump.lower() != "none":
        hop_kwargs = {key: value for key, value in connect_kwargs.items()
                      if key != "look_for_keys"}  # a hop may need its ssh_config's keys too
        for user, hop_address, port in jump_hops(jump):
            gateway = _checked(_Connection(
                hop_address, user=user, port=port, gateway=gateway,
                config=files.config(host.vars.get("ssh_config_file")),
                connect_timeout=max(1, round(timeout)), connect_kwargs=dict(hop_kwargs)),
                host, options, files)
    elif command.lower() != "none":
        gateway = command  # runs only in open()
    return _checked(_Connection(address, user=host.user, port=host.port, config=config,
                                gateway=gateway, connect_timeout=max(1, round(timeout)),
                                connect_kwargs=connect_kwargs), host, options, files)


def _checked(connection: Any, host: Host, options: SshOptions, files: SshFiles) -> Any:
    """``connection`` with its host's recorded keys and the OpenSSH policy for others (new
    keys accepted with --accept-new-host-keys, or where host_key_checking is false)."""
    record_to = files.trust(connection, host.known_hosts_files)
    connection.client.set_missing_host_key_policy(OpenSshPolicy(
        options.accept_new_host_keys or host.accept_new_host_key, record_to, files))
    return connection


def open_once(host: Host, options: SshOptions, files: SshFiles, timeout: float) -> Any:
    """One try at an open Fabric Connection to ``host`` honouring its ssh_config and
    known_hosts (``dial.connect`` tries again while sshd turns it away). A ProxyCommand that
    ended by itself raises ProxyCommandFailed, the transport's error as its cause."""
    try:
        connection = prepare(host, options, files, timeout)
    except ValueError as error:
        raise Unreachable(host.name, "", str(error)) from None
    try:
        connection.open()
    except UnknownHostKey as error:
        connection.close()
        raise Unreachable(host.name, "", str(error)) from None
    except Exception as error:
        proxy = connection.proxy_exited()
        connection.close()
        if type(error).__name__ == "BadHostKeyException":
            raise Unreachable(host.name, "", f"host key for {error.hostname} CHANGED (expected "  # type: ignore[attr-defined]
                              f"{error.expected_key.fingerprint}, got "  # type: ignore[attr-defined]
                              f"{error.key.fingerprint}); refusing to connect",  # type: ignore[attr-defined]
                              hint="if the node was reinstalled, remove its old line from "
                              "known_hosts") from None
        if proxy is not None:
            raise proxy from error
        raise
    connection.transport.set_keepalive(15)
    return connection
