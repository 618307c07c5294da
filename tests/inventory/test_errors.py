"""Every error the inventory loader raises: exit 2, one line, naming the file, the line or
field, and what would be valid. ``apply`` stops at the inventory, before any connection."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nodeprov.cli import app
from tests.pipes import feeding

# ruff: noqa: E501
SUBNET = "[all:vars]\nnode_subnet=10.0.0.0/24\n"

# (case id, {file: text}, the file given to nodeprov, fragments the one-line message must hold)
CASES: list[tuple[str, dict[str, str], str, list[str]]] = [
    ("ini-unknown-section-kind", {"h.ini": "[g:host]\nn1\n"}, "h.ini", ["h.ini:1:", "[g:host]", "valid: [group], [group:vars], [group:children]"]),
    ("ini-section-with-space", {"h.ini": "[my group]\nn1\n"}, "h.ini", ["h.ini:1:", "without spaces"]),
    ("ini-vars-without-equals", {"h.ini": "[g]\nn1\n[g:vars]\nrdzv_port 29500\n"}, "h.ini", ["h.ini:4:", "expected key=value in [g:vars]"]),
    ("ini-child-bad-name", {"h.ini": "[g:children]\na b\n"}, "h.ini", ["h.ini:2:", "is not a group name"]),
    ("ini-vars-undefined-group", {"h.ini": "[g:vars]\nx=1\n"}, "h.ini", ["h.ini:1: g:", "never defined", "add a [g] or [g:children] section"]),
    ("ini-child-undefined", {"h.ini": "[g:children]\nmissing\n"}, "h.ini", ["h.ini:2: missing:", "[g:children] names group 'missing'", "add a [missing] section"]),
    ("ini-unclosed-quote", {"h.ini": "[g]\nn1 x='open\n"}, "h.ini", ["h.ini:2:", "close the quote"]),
    ("ini-host-var-without-equals", {"h.ini": "[g]\nn1 ansible_host 10.0.0.1\n"}, "h.ini", ["h.ini:2: n1:", "expected key=value"]),
    ("range-unequal-width", {"h.ini": "[g]\nn[01:9]\n"}, "h.ini", ["h.ini:2:", "same digits"]),
    ("range-reversed", {"h.ini": "[g]\nn[c:a]\n"}, "h.ini", ["h.ini:2:", "begin <= end"]),
    ("range-no-end", {"h.ini": "[g]\nn[1:]\n"}, "h.ini", ["h.ini:2:", "must give an end value"]),
    ("range-bad-step", {"h.ini": "[g]\nn[1:9:0]\n"}, "h.ini", ["h.ini:2:", "step must be a positive integer"]),
    ("range-three-parts", {"h.ini": "[g]\nn[1:2:3:4]\n"}, "h.ini", ["h.ini:2:", "[begin:end] or [begin:end:step]"]),
    ("range-mixed", {"h.ini": "[g]\nn[1:c]\n"}, "h.ini", ["h.ini:2:", "numbers (01:20) or letters (a:f)"]),
    ("range-unclosed", {"h.ini": "[g]\nn[1:2\n"}, "h.ini", ["h.ini:2:", "no closing ']'"]),
    ("trailing-colon", {"h.ini": "[g]\nn1:\n"}, "h.ini", ["h.ini:2:", "ends in ':'"]),
    ("group-loop", {"h.ini": "[a:children]\nb\n[b:children]\na\n"}, "h.ini", ["h.ini:", "makes a loop"]),
    ("all-as-child", {"h.yml": "g:\n  children:\n    all:\n"}, "h.yml", ["h.yml:3: all:", "cannot be a child group"]),
    ("priority-not-int", {"h.yml": "g:\n  vars: {ansible_group_priority: high}\n"}, "h.yml", ["h.yml:2: g: ansible_group_priority:", "not an integer"]),
    ("host-list-hostile-name", {}, "x$(touch${IFS}pwned),gpu01", ["x$(touch${IFS}pwned),gpu01: x$(touch${IFS}pwned): inventory name", "is not a valid host name", "use ASCII letters"]),
    ("yaml-plugin-config", {"aws_ec2.yml": "plugin: amazon.aws.aws_ec2\n"}, "aws_ec2.yml", ["aws_ec2.yml:1:", "ansible-inventory -i", "--list > inventory.json"]),
    ("yaml-section-not-mapping", {"h.yml": "g:\n  vars: [1, 2]\n"}, "h.yml", ["h.yml:2: g.vars:", "must be a mapping"]),
    ("yaml-host-value-not-mapping", {"h.yml": "g:\n  hosts:\n    n1: 5\n"}, "h.yml", ["h.yml:3: n1:", "mapping of vars (or empty)"]),
    ("yaml-not-a-mapping", {"h.yml": "- n1\n"}, "h.yml", ["h.yml:1:", "mapping of group names"]),
    ("yaml-empty", {"h.yml": "# nothing\n"}, "h.yml", ["h.yml: file is empty"]),
    ("json-hosts-not-list", {"h.json": '{"_meta": {"hostvars": {}}, "g": {"hosts": "n1"}}'}, "h.json", ["h.json: g:", "hosts must be a list"]),
    ("json-hostvars-not-mapping", {"h.json": '{"_meta": {"hostvars": []}}'}, "h.json", ["h.json: _meta.hostvars:", "mapping of host: vars"]),
    ("vars-file-not-mapping", {"h.ini": "n1\n", "group_vars/all.yml": "- 1\n"}, "h.ini", ["group_vars/all.yml:1:", "a vars file holds a mapping"]),
    ("vault-whole-file-damaged", {"h.ini": "n1\n", "host_vars/n1.yml": "$ANSIBLE_VAULT;1.1;AES256\n6162\n"}, "h.ini", ["host_vars/n1.yml: not a valid vault", "damaged", "ansible-vault"]),
    ("vault-whole-file-no-password", {"h.ini": "n1\n", "host_vars/n1.yml": "$ANSIBLE_VAULT;1.1;AES256\n30300a30300a3030\n"}, "h.ini", ["host_vars/n1.yml: vault-encrypted (vault id 'default') and no vault password given", "--vault-password-file"]),
    ("vault-in-inventory", {"h.yml": "all:\n  hosts: {n1: {ansible_host: 10.0.0.1}}\n  vars:\n    node_subnet: 10.0.0.0/24\n    ansible_become_password: !vault |\n      $ANSIBLE_VAULT;1.2;AES256;prod\n      30300a30300a3030\n"}, "h.yml", ["h.yml:5: n1: ansible_become_password:", "vault id 'prod'", "no vault password given"]),
    ("unsafe-name", {"h.ini": "'n1;reboot' ansible_host=10.0.0.1\n" + SUBNET}, "h.ini", ["h.ini:1: n1;reboot:", "not a valid host name", "letters, digits and _ . : @ -"]),
    ("name-as-address", {"h.ini": "n_1\n" + SUBNET}, "h.ini", ["h.ini:1: n_1: ansible_host:", "not an IP address or host name", "set ansible_host"]),
    ("template-undefined", {"h.ini": "n1 ansible_host='{{ nope }}'\n" + SUBNET}, "h.ini", ["h.ini:1: n1: ansible_host: template error", "'nope' is undefined"]),
    ("lookup-plugin", {"h.yml": "all:\n  vars: {node_subnet: 10.0.0.0/24}\n  hosts:\n    n1:\n      ansible_host: \"{{ lookup('env', 'NODE1_IP') }}\"\n"}, "h.yml", ["h.yml:5: n1: ansible_host: template error:", "lookup('env', ...) runs Ansible's lookup plugin 'env', which nodeprov does not run", "-e NAME=VALUE"]),
    ("query-plugin", {"h.ini": "n1 ansible_host=10.0.0.1 ansible_become_password=\"{{ query('community.general.passwordstore', 'sudo') }}\"\n" + SUBNET}, "h.ini", ["h.ini:1: n1: ansible_become_password: template error:", "lookup plugin 'community.general.passwordstore'"]),
    ("filter-plugin", {"h.ini": "n1 ansible_host=\"{{ '10.0.0.9' | regex_replace('9', '1') }}\"\n" + SUBNET}, "h.ini", ["h.ini:1: n1: ansible_host: template error:", "filter 'regex_replace' is not one of Jinja's own filters", "Ansible's filter plugins"]),
    ("test-plugin", {"h.ini": "n1 ansible_host=\"{{ '10.0.0.1' if inventory_hostname is match('n') else '' }}\"\n" + SUBNET}, "h.ini", ["h.ini:1: n1: ansible_host: template error:", "test 'match' is not one of Jinja's own tests"]),
    ("template-loop", {"h.ini": "n1 ansible_host=10.0.0.1 venv_path='{{ venv_path }}'\n" + SUBNET}, "h.ini", ["h.ini:1: n1: venv_path: template error", "refers to itself"]),
    ("invalid-known-var", {"h.ini": "n1 ansible_host=10.0.0.1 ansible_ssh_port=ssh\n" + SUBNET}, "h.ini", ["h.ini:1: n1: ansible_ssh_port:", "not a port"]),
    ("alias-user-injection", {"h.ini": "n1 ansible_host=10.0.0.1 ansible_ssh_user='root;id'\n" + SUBNET}, "h.ini", ["h.ini:1: n1: ansible_ssh_user:", "not a user name"]),
    ("proxyjump-bad-port", {"h.ini": "n1 ansible_host=10.0.0.1 ansible_ssh_common_args='-J jump:99999'\n" + SUBNET}, "h.ini", ["h.ini:1: n1: ansible_ssh_common_args:", "not a port", "-o ProxyJump=[user@]host[:port]"]),
    ("proxycommand-newline", {"h.yml": "all:\n  vars: {node_subnet: 10.0.0.0/24}\n  hosts:\n    n1:\n      ansible_host: 10.0.0.1\n      ansible_ssh_extra_args: \"-o 'ProxyCommand=nc %h\\nrm' \"\n"}, "h.yml", ["h.yml:6: n1: ansible_ssh_extra_args:", "newline"]),
    ("host-shell-injection", {"h.yml": "all:\n  vars: {node_subnet: 10.0.0.0/24}\n  hosts:\n    n1:\n      ansible_host: \"1.2.3.4; rm -rf /\"\n"}, "h.yml", ["h.yml:5: n1: ansible_host:", "'1.2.3.4; rm -rf /' is not an IP address or host name"]),
    ("user-command-substitution", {"h.yml": "all:\n  vars: {node_subnet: 10.0.0.0/24}\n  hosts:\n    n1:\n      ansible_host: 10.0.0.1\n      ansible_user: !unsafe \"$(id)\"\n"}, "h.yml", ["h.yml:6: n1: ansible_user:", "'$(id)' is not a user name"]),
    ("host-named-as-ssh-option", {"h.ini": "-oProxyCommand=touch\\ /tmp/pwned ansible_host=10.0.0.1\n" + SUBNET}, "h.ini", ["h.ini:1: -oProxyCommand=touch /tmp/pwned:", "not a valid host name", "not starting with -"]),
    ("address-as-ssh-option", {"h.ini": "n1 ansible_host=-oProxyCommand=id\n" + SUBNET}, "h.ini", ["h.ini:1: n1: ansible_host:", "'-oProxyCommand=id' is not an IP address or host name"]),
    ("become-user", {"h.ini": "n1 ansible_host=10.0.0.1 ansible_become_user=postgres\n" + SUBNET}, "h.ini", ["h.ini:1: n1: ansible_become_user:", "becomes root only"]),
    ("no-subnet", {"h.ini": "n1 ansible_host=10.0.0.1\n"}, "h.ini", ["h.ini:1: n1: node_subnet:", "node_subnet is required"]),
    ("node-address-outside", {"h.ini": "n1 ansible_host=n1.example.org node_address=10.9.0.1\n" + SUBNET}, "h.ini", ["h.ini:1: n1: node_address:", "outside node_subnet 10.0.0.0/24"]),
    ("same-address", {"h.ini": "n1 ansible_host=10.0.0.1\nn2 ansible_ssh_host=10.0.0.1\nn3 ansible_host=10.0.0.3\n" + SUBNET}, "h.ini", ["h.ini:2: n2: ansible_ssh_host:", "same address 10.0.0.1:22"]),
    ("same-node-address", {"h.ini": "n1 ansible_host=10.0.0.1\nn2 ansible_host=10.0.0.2 node_address=10.0.0.1\n" + SUBNET}, "h.ini", ["h.ini:2: n2: node_address:", "same node address"]),
    ("no-hosts", {"h.ini": "[g]\n"}, "h.ini", ["h.ini:1: no hosts in this file"]),
    ("no-hosts-folder", {"inv/h.ini": "[g]\n"}, "inv", ["nodeprov: inv: no hosts in any inventory file in this folder;"]),
    ("limit-no-match", {"h.ini": "n1 ansible_host=10.0.0.1\n" + SUBNET}, "h.ini --limit gpu", ["--limit: pattern 'gpu' matches no host or group"]),
    ("limit-escape-whole", {"h.ini": "n1 ansible_host=10.0.0.1\n" + SUBNET}, "h.ini --limit \x1b[31mn1", ["--limit: pattern '\\x1b[31mn1': its part '\\x1b' matches no host or group"]),
    ("limit-part-whole", {"h.ini": "n1 ansible_host=10.0.0.1\n" + SUBNET}, "h.ini --limit ~[(", ["--limit: pattern '~[(': its part '(' matches no host or group"]),
    ("limit-bad-regex-part", {"h.ini": "n1 ansible_host=10.0.0.1\n" + SUBNET}, "h.ini --limit n1:~(", ["--limit: pattern 'n1:~(': invalid host pattern '~('"]),
    ("group-control-ini", {"h.ini": "[g\x1bc\x07]\nn1 ansible_host=10.0.0.1\n" + SUBNET}, "h.ini", ["h.ini:1:", "group name 'g\\x1bc\\x07'", "control or bidirectional"]),
    ("limit-bad-regex", {"h.ini": "n1 ansible_host=10.0.0.1\n" + SUBNET}, "h.ini --limit ~(", ["invalid host pattern '~('"]),
    ("limit-position", {"h.ini": "n1 ansible_host=10.0.0.1\n" + SUBNET}, "h.ini --limit all[3]", ["position 3 is outside 'all', which has 1 hosts"]),
    ("limit-file-missing", {"h.ini": "n1 ansible_host=10.0.0.1\n" + SUBNET}, "h.ini --limit @nofile", ["nofile: --limit:", "file not found; give the path of an existing limit file"]),
]


@pytest.mark.parametrize(("files", "given", "fragments"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_inventory_errors_exit_2_with_a_pointed_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str], given: str,
        fragments: list[str]) -> None:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    path, *options = given.split(" ")
    result = CliRunner().invoke(app, ["facts", path, *options])
    assert result.exit_code == 2, result.output
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "\x1b" not in result.stderr, "terminal escapes are shown escaped"
    for fragment in fragments:
        assert fragment in result.stderr


def test_a_failing_inventory_script_is_named(tmp_path: Path) -> None:
    script = tmp_path / "inventory.sh"
    script.write_text("#!/bin/sh\necho broken >&2\nexit 3\n")
    os.chmod(script, 0o755)
    result = CliRunner().invoke(app, ["inventory", str(script), "--list"])
    assert result.exit_code == 2
    assert result.stderr == f"nodeprov: {script} --list: inventory script exited 3: broken\n"


def test_inventory_command_errors(tmp_path: Path) -> None:
    path = tmp_path / "h.ini"
    path.write_text("n1\n")
    runner = CliRunner()
    assert "give one of --list, --graph GROUP or --host NAME" in runner.invoke(
        app, ["inventory", str(path)]).stderr
    assert "--host: no host 'n2' in the inventory; hosts: n1" in runner.invoke(
        app, ["inventory", str(path), "--host", "n2"]).stderr
    assert "--graph: no group 'gpu'" in runner.invoke(
        app, ["inventory", str(path), "--graph", "gpu"]).stderr


@pytest.mark.parametrize(("content", "said"), [
    (b"\x7fELF\x02\x01\x01\x00gpu1\n", "hosts.bin: --limit: binary data (NUL bytes); expected a limit text file"),
    ("n1\nn\xe9\n".encode("latin-1"), "hosts.bin:2: --limit: not UTF-8 text; save the file as UTF-8"),
    (None, "hosts.bin: --limit: file is over 4194304 bytes; expected a limit file under 4 MiB"),
])
def test_a_limit_file_that_is_no_text_file_is_one_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes | None, said: str) -> None:
    """``-l @FILE``: binary or non-UTF-8 bytes were a UnicodeDecodeError traceback, and
    ``@/dev/zero`` never ended; a pipe stands for the file without end."""
    (tmp_path / "h.ini").write_text("n1 ansible_host=10.0.0.1\n" + SUBNET)
    limit = tmp_path / "hosts.bin"
    if content is None:
        feeding(limit, b"n1\n", 5 << 20)
    else:
        limit.write_bytes(content)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["facts", "h.ini", "--limit", "@hosts.bin"])
    assert result.exit_code == 2, result.output
    assert result.stderr == f"nodeprov: {said}\n"

