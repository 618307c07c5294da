"""Inventory loading: Ansible's format, var precedence, validation that names the line."""

from __future__ import annotations

from pathlib import Path

import pytest
from paramiko import SSHConfig

from nodeprov.errors import InputError
from nodeprov.inventory import load_inventory

NESTED = """\
all:
  vars:
    node_subnet: 10.0.0.0/24
    rdzv_port: 29400
  hosts:
    node1:
      ansible_host: 10.0.0.11
  children:
    gpu:
      vars:
        rdzv_port: 29401
        venv_path: /opt/gpu-venv
      hosts:
        node2: {ansible_host: 10.0.0.12}
      children:
        h100:
          vars: {rdzv_port: 29402}
          hosts:
            node3:
              ansible_host: 10.0.0.13
              rdzv_port: "29403"
            node4: {ansible_host: 10.0.0.14, ansible_port: 2222, ansible_user: admin}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "inventory.yaml"
    path.write_text(text)
    return path


def test_nested_groups_and_precedence(tmp_path: Path) -> None:
    inventory = load_inventory(write(tmp_path, NESTED))
    ports = {host.name: host.vars["rdzv_port"] for host in inventory.hosts}
    assert ports == {"node1": 29400, "node2": 29401, "node3": 29403, "node4": 29402}
    assert inventory.host("node4").vars["venv_path"] == "/opt/gpu-venv"
    assert inventory.host("node1").vars["venv_path"] == "/opt/nodeprov/venv"  # the default
    assert inventory.groups["gpu"] == ("node2", "node3", "node4")
    node4 = inventory.host("node4")
    assert (node4.port, node4.user, node4.address) == (2222, "admin", "10.0.0.14")


@pytest.mark.parametrize(("pattern", "expected"), [
    ("all", ["node1", "node2", "node3", "node4"]),
    ("h100", ["node3", "node4"]),
    ("node[!3]", ["node1", "node2", "node4"]),
    ("gpu,!node3", ["node2", "node4"]),
    ("node1:node4", ["node1", "node4"]),
])
def test_patterns(tmp_path: Path, pattern: str, expected: list[str]) -> None:
    inventory = load_inventory(write(tmp_path, NESTED))
    assert [host.name for host in inventory.select(pattern)] == expected


def test_pattern_matching_nothing_lists_groups(tmp_path: Path) -> None:
    inventory = load_inventory(write(tmp_path, NESTED))
    with pytest.raises(InputError,
                       match="matches no host or group; groups: all, ungrouped, gpu, h100"):
        inventory.select("cpu")


def test_node_address_separates_ssh_from_subnet(tmp_path: Path) -> None:
    inventory = load_inventory(write(tmp_path, """\
all:
  vars: {node_subnet: 10.0.0.0/24}
  hosts:
    node1: {ansible_host: mgmt1.example.org, node_address: 10.0.0.11}
"""))
    host = inventory.hosts[0]
    assert (host.address, host.node_address) == ("mgmt1.example.org", "10.0.0.11")


def test_relative_key_file_is_resolved_from_the_inventory(tmp_path: Path) -> None:
    inventory = load_inventory(write(tmp_path, """\
all:
  vars: {node_subnet: 10.0.0.0/24, ansible_ssh_private_key_file: keys/id}
  hosts:
    node1: {ansible_host: 10.0.0.11}
"""))
    assert inventory.hosts[0].key_file == str(tmp_path / "keys" / "id")


def test_password_is_not_in_repr(tmp_path: Path) -> None:
    inventory = load_inventory(write(tmp_path, """\
all:
  vars: {node_subnet: 10.0.0.0/24, ansible_become: true, ansible_become_password: s3cret}
  hosts:
    node1: {ansible_host: 10.0.0.11, ansible_user: admin}
"""))
    host = inventory.hosts[0]
    assert host.become and host.become_password == "s3cret"
    assert "s3cret" not in repr(host)


def test_example_inventory_loads() -> None:
    example = Path(__file__).parents[2] / "inventory" / "example.yaml"
    inventory = load_inventory(example)
    assert len(inventory.hosts) >= 2


def test_ssh_config_is_parsed_when_connecting_never_while_loading(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The port is ssh_config's business at connect time (a lookup may run Match exec)."""
    (tmp_path / "ssh_config").write_text("Host 10.0.0.11\n  Port 2201\n")
    read: list[str] = []
    monkeypatch.setattr(SSHConfig, "from_path", staticmethod(read.append))
    inventory = load_inventory(write(tmp_path, """\
all:
  vars: {node_subnet: 10.0.0.0/24, ssh_config_file: ssh_config}
  hosts:
    node1: {ansible_host: 10.0.0.11}
    node3: {ansible_host: 10.0.0.13, ansible_port: 2222}
"""))
    ports = {host.name: (host.port, host.vars["ansible_port"]) for host in inventory.hosts}
    assert ports == {"node1": (None, None), "node3": (2222, 2222)}
    assert read == []
