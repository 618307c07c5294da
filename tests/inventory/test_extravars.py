"""-e/--extra-vars: KEY=VALUE, @file and {...}; checked by the variable table; above every
inventory and play var."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeprov.errors import InputError
from nodeprov.inventory import load_inventory
from nodeprov.inventory.extravars import parse_extra_vars, repeatable
from nodeprov.playbook import load_playbook

INVENTORY = """\
all:
  vars: {node_subnet: 10.0.0.0/24, rdzv_port: 29501, motd_line: from-inventory}
  hosts:
    node1: {ansible_host: 10.0.0.11, motd_line: from-host}
"""
PLAYBOOK = """\
- name: notice
  hosts: all
  vars: {motd_line: from-play}
  tasks:
    - {name: motd, block: {path: /etc/motd, name: motd, lines: ["{{ motd_line }}"]}}
"""


def test_words_files_and_mappings_later_ones_winning(tmp_path: Path) -> None:
    (tmp_path / "vars.yaml").write_text("pip_packages: [numpy]\nipv6: enabled\n")
    found = parse_extra_vars(["ipv6=disabled rdzv_port=29600 'motd=a b'", f"@{tmp_path}/vars.yaml",
                              '{"nccl_env": {"NCCL_DEBUG": "INFO"}}', "rdzv_port=29700"])
    assert found == {"ipv6": "enabled", "rdzv_port": "29700", "motd": "a b",
                     "pip_packages": ["numpy"], "nccl_env": {"NCCL_DEBUG": "INFO"}}


@pytest.mark.parametrize(("values", "message"), [
    (["rdzv_port=99999"], "-e/--extra-vars rdzv_port: 99999 is not a port; expected an integer "
                          "from 1 to 65535"),
    (["ipv6=maybe"], "-e/--extra-vars ipv6: 'maybe' is not one of: enabled, disabled"),
    (["pip_packages=numpy"], "-e/--extra-vars pip_packages: expected a list, got str"),
    (["rdzv_port"], "-e/--extra-vars: 'rdzv_port' is not KEY=VALUE"),
    (["1x=2"], "-e/--extra-vars 1x: '1x' is not a variable name"),
    (["motd='unclosed"], "-e/--extra-vars: \"motd='unclosed\": No closing quotation"),
    (['{"job_timeout": 0}'], "-e/--extra-vars job_timeout: 0 is not a positive integer"),
    # Ansible reads a value starting with [ or { as YAML: "could not be made into a dictionary"
    (["[1, 2]"], "-e/--extra-vars: '[1, 2]' is not a mapping; give {\"name\": value}"),
    (["./site.yml"], "-e/--extra-vars: './site.yml' is not KEY=VALUE; give a file as @./site.yml"),
    (["/etc/site.yml"], "-e/--extra-vars: '/etc/site.yml' is not KEY=VALUE; give a file as "
                        "@/etc/site.yml"),
])
def test_a_bad_value_names_the_option_and_what_is_valid(values: list[str], message: str) -> None:
    with pytest.raises(InputError) as raised:
        parse_extra_vars(values)
    assert str(raised.value).startswith(message)


def test_a_bad_value_in_a_file_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "vars.yaml"
    path.write_text("ipv6: enabled\nssh_allow_from: everywhere\n")
    with pytest.raises(InputError) as raised:
        parse_extra_vars([f"@{path}"])
    assert str(raised.value).startswith(f"{path}:2: ssh_allow_from: ")
    with pytest.raises(InputError, match="file not found"):
        parse_extra_vars([f"@{tmp_path}/missing.yaml"])
    path.write_text("- a\n")
    with pytest.raises(InputError, match=f"{path}:1: extra vars file must be a mapping"):
        parse_extra_vars([f"@{path}"])


def test_extra_vars_beat_host_group_and_play_vars(tmp_path: Path) -> None:
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    (tmp_path / "playbook.yaml").write_text(PLAYBOOK)
    extra = parse_extra_vars(["motd_line=from-cli rdzv_port=29600"])
    inventory = load_inventory(tmp_path / "inventory.yaml", extra_vars=extra)
    (host,) = inventory.hosts
    assert host.vars["rdzv_port"] == 29600 and host.vars["motd_line"] == "from-cli"
    (play,) = load_playbook(tmp_path / "playbook.yaml", inventory, extra).plays
    params = play.tasks[0].params_for(host, inventory.groups, None)
    assert list(params.lines) == ["from-cli"]
    # without -e the play's vars win over the host's, as in Ansible
    plain = load_inventory(tmp_path / "inventory.yaml")
    (play,) = load_playbook(tmp_path / "playbook.yaml", plain).plays
    assert list(play.tasks[0].params_for(plain.hosts[0], plain.groups, None).lines) == [
        "from-play"]


def test_extra_vars_reach_the_ssh_settings(tmp_path: Path) -> None:
    (tmp_path / "inventory.yaml").write_text(INVENTORY)
    extra = parse_extra_vars(["ansible_user=deploy ansible_port=2222 ansible_become=true"])
    (host,) = load_inventory(tmp_path / "inventory.yaml", extra_vars=extra).hosts
    assert (host.user, host.port, host.become) == ("deploy", 2222, True)


@pytest.mark.parametrize(("given", "expected"), [
    (["ansible_become_password=Canary-1 rdzv_port=29600"], ["-e", "rdzv_port=29600", "-K"]),
    (['{"ansible_sudo_pass": "Canary-1", "pip_packages": ["numpy"]}'],
     ["-e", '{"pip_packages": ["numpy"]}', "-K"]),
    (["ansible_ssh_pass=Canary-1"], []),
    (['motd="a b" ipv6=enabled', "@vars.yaml"], ["-e", 'motd="a b" ipv6=enabled', "-e",
                                                 "@vars.yaml"]),
])
def test_a_printed_command_repeats_the_extra_vars_but_no_password(
        given: list[str], expected: list[str]) -> None:
    assert repeatable(given) == expected


def test_the_repair_command_of_a_drift_asks_for_the_password_instead() -> None:
    from nodeprov.checks import Drift

    drift = Drift("n2", "hosts", "inv.yaml", "hosts",
                  extra_vars=("ansible_become_password=Canary-1",))
    assert drift.repair == "nodeprov apply inv.yaml -K --limit n2 --tags hosts"
