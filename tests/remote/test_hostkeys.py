"""hostkeys: one run reads each ssh_config and known_hosts file once; host keys stay strict."""

from __future__ import annotations

import base64
import os
import re
from pathlib import Path

import pytest
from paramiko import Ed25519Key, HostKeys, SSHClient, SSHConfig

from nodeprov.errors import Unreachable
from nodeprov.inventory import Host, SshConfigs
from nodeprov.remote.dial import connect
from nodeprov.remote.hostkeys import (
    OpenSshPolicy,
    SshFiles,
    UnknownHostKey,
    jump_hops,
    known_hosts_files,
    prepare,
)
from nodeprov.remote.options import SshOptions
from tests.conftest import MakeTestbed

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
    recorded = client.get_host_keys().lookup("10.0.0.3")
    assert recorded is not None and recorded["ssh-ed25519"] == NODE1_KEY
    assert known_a.read_text() == before + f"10.0.0.3 ssh-ed25519 {NODE1_KEY.get_base64()}\n"
    # a later connection of the run (the firewall's confirm) checks against the recorded key
    again = prepare(node3, SshOptions(), files)
    assert again.client.get_host_keys().lookup("10.0.0.3")["ssh-ed25519"] == NODE1_KEY


def test_a_missing_ssh_config_fails_the_connection_as_fabric_does(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no-such-config"):
        prepare(host("node1", "10.0.0.1", 22, tmp_path / "no-such-config"), SshOptions(),
                SshFiles())


def test_user_known_hosts_file_none_is_no_file(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # ssh's `UserKnownHostsFile none`, in ssh arguments or ssh_config, reads and writes none
    monkeypatch.chdir(tmp_path)
    config = SSHConfig.from_text("Host *\n  UserKnownHostsFile none\n").lookup("10.0.0.1")
    assert known_hosts_files(config) == [Path(os.devnull)]
    node = Host(name="node1", address="10.0.0.1", node_address="10.0.0.1",
                vars={"ssh_config_file": os.devnull}, known_hosts_files=("none",))
    connection = prepare(node, SshOptions(), SshFiles())
    assert SshFiles().trust(connection, node.known_hosts_files) == Path(os.devnull)
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize(("given", "config", "gateway"), [
    # -o ProxyCommand=none failed every host with "list index out of range"
    ({"proxy_command": "none"}, "", False),
    # the inventory's none keeps ssh_config's hop out, as ssh reads the command line first
    ({"proxy_command": "none"}, "  ProxyJump root@10.0.0.9\n", False),
    ({"proxy_jump": "none"}, "  ProxyCommand nc %h %p\n", False),
    ({}, "  ProxyCommand nc %h %p\n", "nc 10.0.0.1 22"),
    ({}, "  ProxyCommand none\n", False),
    ({"proxy_command": "nc -x proxy %h %p"}, "  ProxyJump root@10.0.0.9\n",
     "nc -x proxy %h %p"),
])
def test_a_hop_of_none_means_no_hop_whatever_ssh_config_says(
        tmp_path: Path, given: dict[str, str], config: str, gateway: object) -> None:
    (tmp_path / "ssh_config").write_text(f"Host *\n{config}")
    node = Host(name="node1", address="10.0.0.1", node_address="10.0.0.1",
                vars={"ssh_config_file": str(tmp_path / "ssh_config")},
                proxy_jump=given.get("proxy_jump"), proxy_command=given.get("proxy_command"))
    assert prepare(node, SshOptions(), SshFiles()).gateway == gateway


@pytest.mark.integration
@pytest.mark.parametrize("given_by", ["inventory", "ssh_config"])
def test_a_jump_host_key_is_checked_like_the_final_hosts(
        make_testbed: MakeTestbed, tmp_path: Path, given_by: str) -> None:
    """node2 reached through node1: node1's key unknown is refused (recorded with accept-new),
    a wrong key recorded for node1 is refused, though node2's own key is right each time."""
    bed = make_testbed(nodes=2)
    jump, target = bed.address("node1"), bed.address("node2")
    target_keys = "".join(line for line in bed.layout.known_hosts.read_text().splitlines(True)
                          if line.startswith("node2,"))
    known = tmp_path / "known_hosts"
    known.write_text(target_keys)
    config = tmp_path / "ssh_config"
    config.write_text((f"Host {target}\n  ProxyJump root@{jump}\n" if given_by == "ssh_config"
                       else "") + f"Host *\n  User root\n  IdentityFile {bed.layout.client_key}\n"
                       f"  IdentitiesOnly yes\n  UserKnownHostsFile {known}\n")
    node2 = Host(name="node2", address=target, node_address=target, user="root",
                 key_file=str(bed.layout.client_key),
                 proxy_jump=f"root@{jump}:22" if given_by == "inventory" else None,
                 vars={"ssh_config_file": str(config)})

    with pytest.raises(Unreachable, match=f"unknown host key for {jump} "):
        connect(node2, SshOptions(), SshFiles())
    assert known.read_text() == target_keys

    connection = connect(node2, SshOptions(accept_new_host_keys=True), SshFiles())
    try:
        seen = connection.run("hostname; echo $SSH_CLIENT", hide=True,
                              in_stream=False).stdout.split()
    finally:
        connection.close()
    assert seen[:2] == ["node2", jump], "the session must come through the jump host"
    recorded = known.read_text()
    assert recorded.startswith(target_keys) and f"\n{jump} " in f"\n{recorded}"
    assert connect(node2, SshOptions(), SshFiles()).close() is None  # known now: no accept-new

    known.write_text(target_keys + f"{jump} ssh-ed25519 {OTHER_KEY.get_base64()}\n")
    with pytest.raises(Unreachable, match=f"host key for {jump} CHANGED"):
        connect(node2, SshOptions(accept_new_host_keys=True), SshFiles())
    assert f"{OTHER_KEY.get_base64()}" in known.read_text()


@pytest.mark.parametrize(("spec", "problem"), [
    ("root@10.0.0.1;reboot", "not an IP address or host name"),
    ("-oProxyCommand=x", "not an IP address or host name"),
    ("$(id)@10.0.0.1", "not a user name"),
    ("10.0.0.1:0", "not a port"),
    ("fd00::1%$(id)", "not an IP address or host name"),
])
def test_a_bad_jump_spec_fails_before_any_connection(spec: str, problem: str) -> None:
    with pytest.raises(ValueError, match=re.escape(problem)):
        jump_hops(spec)


@pytest.mark.integration
def test_a_proxy_command_runs_only_when_connecting_and_the_final_key_is_checked_through_it(
        make_testbed: MakeTestbed, tmp_path: Path) -> None:
    bed = make_testbed(nodes=2)
    jump, target = bed.address("node1"), bed.address("node2")
    target_keys = "".join(line for line in bed.layout.known_hosts.read_text().splitlines(True)
                          if line.startswith("node2,"))
    known = tmp_path / "known_hosts"
    config = tmp_path / "ssh_config"
    config.write_text(f"Host *\n  User root\n  IdentityFile {bed.layout.client_key}\n"
                      f"  IdentitiesOnly yes\n  UserKnownHostsFile {known}\n")
    marker = tmp_path / "proxy-ran"
    command = (f"sh -c 'touch {marker} && exec ssh -F {bed.ssh_config_path} -W %h:%p node1'")
    node2 = Host(name="node2", address=target, node_address=target, user="root",
                 key_file=str(bed.layout.client_key), proxy_command=command,
                 vars={"ssh_config_file": str(config)})

    prepare(node2, SshOptions(), SshFiles())
    assert not marker.exists(), "a ProxyCommand runs only when connecting"
    with pytest.raises(Unreachable, match=f"unknown host key for {target} "):
        connect(node2, SshOptions(), SshFiles())
    assert marker.exists()
    known.write_text(target_keys)
    connection = connect(node2, SshOptions(), SshFiles())
    try:
        seen = connection.run("hostname; echo $SSH_CLIENT", hide=True,
                              in_stream=False).stdout.split()
    finally:
        connection.close()
    assert seen[:2] == ["node2", jump]
