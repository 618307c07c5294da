"""Hostile values (issue #8): one that can never be valid for its field stops at validation
(exit 2, before any connection); a free-form one reaches the node as inert data, and nothing it
spells runs on this machine or any node.

tests/test_bad_input.py holds the main corpus; the cases here add shell and option injection
in the fields it does not try.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from nodeprov.cli import app
from nodeprov.remote.session import Session
from nodeprov.tasks.textfiles import blocks, envfile
from tests.conftest import MakeTestbed
from tests.reliability.helpers import apply, apply_args
from tests.test_bad_input import GOOD_INVENTORY, GOOD_PLAYBOOK, inventory_with, playbook_with_task

TORCH_TASK = playbook_with_task("    - name: t\n      torch: {packages: '{{ pip_packages }}', "
                                "index_url: '{{ pip_index_url }}'}\n")
NCCL_TASK = playbook_with_task("    - name: t\n      nccl_env: {subnet: '{{ node_subnet }}', "
                               "extra: '{{ nccl_env }}'}\n")


def case(name: str, inventory: str, playbook: str | None, fragments: list[str],
         marks: Any = ()) -> Any:
    """A bad input: its inventory, its playbook (None: a good one), what the message says."""
    return pytest.param(inventory, playbook, fragments, id=name, marks=marks)


CASES = [
    case("host-option", GOOD_INVENTORY.replace("node2:", "'-oProxyCommand=sh':"), None,
     ["not a valid host name"]),
    case("host-backticks", GOOD_INVENTORY.replace("node2:", "'node`id`':"), None,
     ["not a valid host name"]),
    case("address-option", GOOD_INVENTORY.replace("10.0.0.12", "'-oProxyCommand=touch /x'"),
         None, ["ansible_host", "not an IP address or host name"]),
    case("address-newline", GOOD_INVENTORY.replace("10.0.0.12", '"10.0.0.12\\nreboot"'), None,
     ["not an IP address or host name"]),
    case("user-option", inventory_with("    ansible_user: -oProxyCommand=x"), None,
     ["ansible_user", "not a user name"]),
    case("user-subst", inventory_with("    ansible_user: '$(reboot)'"), None, ["not a user name"]),
    case("ifname-subst", inventory_with("    nccl_socket_ifname: '$(reboot)'"), None,
     ["nccl_socket_ifname", "not an interface name"]),
    case("ifname-backticks", inventory_with("    nccl_socket_ifname: '`reboot`'"), None,
     ["not an interface name"]),
    case("subnet-injection", GOOD_INVENTORY.replace("10.0.0.0/24", "'10.0.0.0/24; reboot'"), None,
     ["node_subnet", "not a valid CIDR"]),
    case("ssh-from-injection", inventory_with("    ssh_allow_from: 'any; reboot'"), None,
     ["ssh_allow_from", "not a CIDR"]),
    case("port-injection", inventory_with("    rdzv_port: '29500; reboot'"), None,
     ["rdzv_port", "not a port"]),
    case("job-timeout-injection", inventory_with("    job_timeout: '60; reboot'"), None,
     ["job_timeout", "not a positive integer"]),
    case("venv-option", inventory_with("    venv_path: -rf"), None, ["venv_path", "absolute path"]),
    case("key-file-newline", inventory_with('    ansible_ssh_private_key_file: "/k\\n-oX=y"'), None,
     ["ansible_ssh_private_key_file", "absolute path"]),
    case(
        "pip-spec-shell", inventory_with("    pip_packages: ['numpy; touch /tmp/pwned']"),
        TORCH_TASK, ["packages", "not a pip requirement"]),
    case(
        "pip-spec-subst", inventory_with("    pip_packages: ['$(touch /tmp/pwned)']"),
        TORCH_TASK, ["not a pip requirement"]),
    case("index-url-option", inventory_with("    pip_index_url: --trusted-host=evil"), None,
     ["pip_index_url", "start with '-'"]),
    case("find-links-newline", inventory_with('    pip_find_links: ["/w\\n--pre"]'), None,
     ["pip_find_links", "newline"]),
    case("env-value-hash", inventory_with("    nccl_env: {NCCL_DEBUG: 'INFO # x'}"), NCCL_TASK,
     ["extra", "'#'"]),
    case("block-name-injection", GOOD_INVENTORY, playbook_with_task(
        "    - name: t\n      block: {path: /a, name: 'x; reboot'}\n"),
     ["block", "not an environment variable name"]),
    case("block-line-newline", inventory_with('    motd: "a\\nb"'), playbook_with_task(
        "    - name: t\n      block: {path: /a, lines: ['{{ motd }}']}\n"), ["newline"]),
    case("sysctl-file-elsewhere", GOOD_INVENTORY, playbook_with_task(
        "    - name: t\n      ipv6: {sysctl_file: '/tmp/$(reboot).conf'}\n"),
     ["sysctl_file", "not read at boot"]),
]


@pytest.mark.parametrize(("inventory", "playbook", "fragments"), CASES)
def test_a_value_never_valid_for_its_field_exits_2_before_any_connection(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, inventory: str, playbook: str | None,
        fragments: list[str]) -> None:
    connections: list[str] = []
    monkeypatch.setattr(Session, "open", lambda self: connections.append(self.host.name))
    (tmp_path / "inventory.yaml").write_text(inventory)
    (tmp_path / "playbook.yaml").write_text(playbook or GOOD_PLAYBOOK)
    result = CliRunner().invoke(app, ["apply", str(tmp_path / "inventory.yaml"), "-p",
                                      str(tmp_path / "playbook.yaml")])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and result.stderr.count("\n") == 1
    for fragment in fragments:
        assert fragment in result.stderr
    assert connections == []


def test_a_template_failing_at_render_time_exits_2(tmp_path: Path) -> None:
    (tmp_path / "inventory.yaml").write_text(GOOD_INVENTORY)
    (tmp_path / "playbook.yaml").write_text(playbook_with_task(
        "    - name: t\n      block: {path: /a, lines: ['{{ 100 | random }}']}\n"))
    result = CliRunner().invoke(app, ["apply", str(tmp_path / "inventory.yaml"), "-p",
                                      str(tmp_path / "playbook.yaml")])
    assert result.exit_code == 2 and "template" in result.stderr


# --- free-form values, applied for real --------------------------------------------------------

FREE_FORM = """\
- name: hostile data
  hosts: all
  tasks:
    - name: venv
      venv: {path: "{{ venv_path }}"}
    - name: NCCL env
      nccl_env: {subnet: "{{ node_subnet }}", extra: "{{ nccl_env }}"}
    - name: odd block
      block: {path: "{{ odd_path }}", name: odd, lines: "{{ odd_lines }}"}
    - name: templated
      block: {path: /etc/motd, name: templated, lines: ["before {{ odd_lines[0] }} after"]}
"""


def _raw(text: str) -> str:
    return f"{{% raw %}}{text}{{% endraw %}}" if "{{" in text else text


@pytest.mark.integration
def test_free_form_values_reach_the_node_as_literal_text_and_run_nothing(
        make_testbed: MakeTestbed, tmp_path: Path) -> None:
    bed = make_testbed(nodes=2)
    canary = f"/tmp/nodeprov-pwned-{secrets.token_hex(4)}"
    spells = [f"$(touch {canary}-1)", f"`touch {canary}-2`", f"'; touch {canary}-3; '",
              f'"; touch {canary}-4; "', f"x && touch {canary}-5 || touch {canary}-6", "-n",
              "--", "\\n not a newline", "{{ 7 * 7 }}", "%s %n %x", "tab\there"]
    env = {"NCCL_DEBUG": spells[0], "NCCL_ALGO": spells[1], "NCCL_PROTO": spells[2],
           "NCCL_X": spells[3], "NCCL_Y": "-n", "NCCL_Z": "{{ 7 * 7 }}"}
    venv = f"/opt/my venv $(touch {canary}-7);`touch {canary}-8` -x"
    odd_path = f"/etc/odd dir $(touch {canary}-9)/'q\" -n;`touch {canary}-10`"
    # inventory values are Jinja templates, as in Ansible: "{% raw %}" keeps "{{ 7 * 7 }}" text
    args = apply_args(bed, tmp_path, FREE_FORM, nccl_env={k: _raw(v) for k, v in env.items()},
                      venv_path=venv, odd_path=odd_path, odd_lines=[_raw(s) for s in spells])

    check = apply(*args, "--check")
    assert check.code == 0 and set(check.statuses().values()) == {"changed"}, check.output
    first = apply(*args)
    assert first.code == 0, first.output
    again = apply(*args)
    assert again.code == 0 and set(again.statuses().values()) == {"ok"}, again.output
    assert set(apply(*args, "--check").statuses().values()) == {"ok"}

    for node in bed.nodes:
        def read(path: str, node: str = node) -> str:
            return bed.exec(node, "cat", "--", path, check=True).stdout

        assert blocks.block_lines(read(odd_path), "odd") == spells
        assert blocks.block_lines(read("/etc/motd"), "templated") == [f"before {spells[0]} after"]
        assert read(f"{venv}/pyvenv.cfg").startswith("home = ")
        pam = {name: value for _line, name, value in envfile.parse_pam_env(
            read("/etc/environment"))}
        nccl = {name: value for _line, name, value in envfile.parse_nccl_conf(
            read("/etc/nccl.conf"))}
        for name, value in env.items():
            assert pam[name] == value and nccl[name] == value
        # what a login on the node gets, through pam_env
        assert bed.ssh(node, "printenv", "NCCL_DEBUG", "NCCL_PROTO").stdout == (
            f"{env['NCCL_DEBUG']}\n{env['NCCL_PROTO']}\n")
        planted = bed.exec(node, "sh", "-c", 'ls -d "$1"-* 2>/dev/null', "look", canary).stdout
        assert planted == "", f"{node} ran a value: {planted}"
    assert list(Path("/tmp").glob(Path(canary).name + "-*")) == [], "this machine ran a value"
