"""hostkeys: one run reads each ssh_config and known_hosts file once; host keys stay strict."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from paramiko import Ed25519Key, HostKeys, SSHClient, SSHConfig

from nodeprov.hostkeys import OpenSshPolicy, SshFiles, UnknownHostKey, prepare
from nodeprov.inventory import Host, SshConfigs
from nodeprov.session import SshOptions

NODE1_KEY = Ed25519Key(data=base64.b64decode(
    "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"))
OTHER_KEY = Ed25519Key(data=base64.b64decode(
    "AAAAC3NzaC1lZDI1NTE5AAAAIPUUHjlk3t2kz3GiwhsfiWkfaS+sOLMliJFTiiOQNYDv"))


def host(name: str, address: str, port: int, ssh_config: Path) -> Host:
    return Host(name=name, address=address, node_address=address, port=port,
                vars={"ssh_config_file": str(ssh_config)})


@pytest.fixture
def ssh_files(tmp_path: Path) -> Path:
    """An ssh_config with one host's User and IdentityFile, and two known_hosts files."""
    (tmp_path / "known_a").write_text(f"10.0.0.1 ssh-ed25519 {NODE1_KEY.get_base64()}\n"
                                      f"{HostKeys.hash_host('10.0.0.9')} ssh-ed25519 "
                                      f"{OTHER_KEY.get_base64()}\n")  # HashKnownHosts yes
    (tmp_path / "known_b").write_text(f"[10.0.0.2]:2202 ssh-ed25519 {OTHER_KEY.get_base64()}\n"
                                      f"10.0.0.1 ssh-ed25519 {OTHER_KEY.get_base64()}\n")
    config = tmp_path / "ssh_config"
    config.write_text(f"Host node1 10.0.0.1\n  User alice\n  IdentityFile {tmp_path}/id_a\n"
                      f"Host *\n  UserKnownHostsFile {tmp_path}/known_a {tmp_path}/known_b\n")
    return config


def test_each_file_is_read_once_per_run_and_each_host_gets_its_own_settings(
        ssh_files: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read: list[str] = []
    parse, load = SSHConfig.from_path, HostKeys.load

    def counted_parse(path: str) -> SSHConfig:
        read.append(path)
        return parse(path)

    def counted_load(self: HostKeys, path: str) -> None:
        read.append(path)
        load(self, path)

    monkeypatch.setattr(SSHConfig, "from_path", staticmethod(counted_parse))
    monkeypatch.setattr(HostKeys, "load", counted_load)
    ssh_configs = SshConfigs()
    assert ssh_configs.parsed(str(ssh_files)) is not None  # parsed once, shared by the run
    files = SshFiles(ssh_configs)

    node1 = prepare(host("node1", "10.0.0.1", 22, ssh_files), SshOptions(), files)
    node2 = prepare(host("node2", "10.0.0.2", 2202, ssh_files), SshOptions(), files)

    folder = ssh_files.parent
    assert sorted(read) == [str(folder / "known_a"), str(folder / "known_b"), str(ssh_files)]
    assert (node1.user, node1.connect_kwargs["key_filename"]) == ("alice", [str(folder / "id_a")])
    assert (node2.port, node2.connect_kwargs.get("key_filename")) == (2202, None)
    # the first file's key wins, as when ssh reads the files in order
    assert node1.client.get_host_keys().lookup("10.0.0.1")["ssh-ed25519"] == NODE1_KEY
    assert node1.client.get_host_keys().lookup("[10.0.0.2]:2202") is None
    assert node2.client.get_host_keys().lookup("[10.0.0.2]:2202")["ssh-ed25519"] == OTHER_KEY
    hashed = prepare(host("node9", "10.0.0.9", 22, ssh_files), SshOptions(), files)
    assert hashed.client.get_host_keys().lookup("10.0.0.9")["ssh-ed25519"] == OTHER_KEY


def test_connections_share_the_parsed_ssh_config_but_not_a_fabric_config(
        ssh_files: Path) -> None:
    """Fabric writes to a connection's Config while it connects; one Config shared by the run's
    threads made another thread read it empty ("No attribute or config key found for
    'gateway'", seen at 32 nodes)."""
    files = SshFiles(SshConfigs())
    node1 = prepare(host("node1", "10.0.0.1", 22, ssh_files), SshOptions(), files)
    node2 = prepare(host("node2", "10.0.0.2", 2202, ssh_files), SshOptions(), files)
    assert node1.config is not node2.config
    assert node1.config.base_ssh_config is node2.config.base_ssh_config


def test_unknown_key_refused_unless_accept_new_then_recorded_for_later_connections(
        ssh_files: Path) -> None:
    files = SshFiles()
    node3 = host("node3", "10.0.0.3", 22, ssh_files)
    known_a = ssh_files.parent / "known_a"
    before = known_a.read_text()
    assert prepare(node3, SshOptions(), files).client.get_host_keys().lookup("10.0.0.3") is None

    with pytest.raises(UnknownHostKey, match="--accept-new-host-keys"):
        OpenSshPolicy(False, known_a, files).missing_host_key(SSHClient(), "10.0.0.3", NODE1_KEY)
    assert known_a.read_text() == before

    client = SSHClient()
    OpenSshPolicy(True, known_a, files).missing_host_key(client, "10.0.0.3", NODE1_KEY)
    assert client.get_host_keys().lookup("10.0.0.3")["ssh-ed25519"] == NODE1_KEY
    assert known_a.read_text() == before + f"10.0.0.3 ssh-ed25519 {NODE1_KEY.get_base64()}\n"
    # a later connection of the run (the firewall's confirm) checks against the recorded key
    again = prepare(node3, SshOptions(), files)
    assert again.client.get_host_keys().lookup("10.0.0.3")["ssh-ed25519"] == NODE1_KEY


def test_a_missing_ssh_config_fails_the_connection_as_fabric_does(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no-such-config"):
        prepare(host("node1", "10.0.0.1", 22, tmp_path / "no-such-config"), SshOptions(),
                SshFiles())
