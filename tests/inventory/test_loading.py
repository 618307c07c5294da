"""The loader's rules one by one: each test fails on the loader before issue #12."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nodeprov.cli import app
from nodeprov.errors import InputError
from nodeprov.inventory import load_inventory, read_inventory
from nodeprov.inventory.patterns import select
from nodeprov.inventory.sshconfigs import SshConfigs
from nodeprov.inventory.templating import HostTemplar
from nodeprov.playbook import load_playbook
from tests.inventory.oracle import list_hosts, templated

CORPUS = Path(__file__).parent.parent / "data" / "inventories"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_a_group_mentioned_twice_keeps_its_vars_and_members() -> None:
    inventory = load_inventory(CORPUS / "yaml-repeated-group" / "inventory.yaml")
    ports = {host.name: host.vars["rdzv_port"] for host in inventory.hosts}
    assert ports == {"gpu1": 29600, "gpu2": 29600, "cpu1": 29500}
    assert inventory.host("gpu2").groups == ("cluster", "gpu")


def test_group_vars_tree_precedence() -> None:
    inventory = load_inventory(CORPUS / "group-vars-tree" / "hosts.ini")
    node1, node2 = inventory.host("node1"), inventory.host("node2")
    # host_vars > group_vars/gpu > [gpu:vars]; later files in group_vars/gpu/ win
    assert (node1.vars["rdzv_port"], node2.vars["rdzv_port"]) == (29999, 29601)
    assert node2.vars["nccl_env"] == {"NCCL_DEBUG": "WARN"}
    assert node2.user == "ubuntu"


def test_connection_aliases_are_read_as_ansible_reads_them(tmp_path: Path) -> None:
    path = write(tmp_path, "hosts.ini", """\
[gpu]
g1 ansible_ssh_host=10.0.0.11 ansible_host=10.9.9.9 ansible_ssh_port=2200 ansible_ssh_user=ops
g2 ansible_host=10.0.0.12 ansible_ssh_extra_args='-J admin@bastion.example.org:2222'
[gpu:vars]
node_subnet=10.0.0.0/24
ansible_become=true
ansible_sudo_pass=s3cret
ansible_ssh_common_args='-o ProxyCommand="ssh -W %h:%p jump" -o ServerAliveInterval=5'
""")
    warnings: list[str] = []
    inventory = load_inventory(path, warn=warnings.append)
    g1, g2 = inventory.host("g1"), inventory.host("g2")
    assert (g1.address, g1.port, g1.user, g1.become_password) == ("10.0.0.11", 2200, "ops",
                                                                   "s3cret")
    assert g1.proxy_command == "ssh -W %h:%p jump" and g1.proxy_jump is None
    # ssh reads the common args' ProxyCommand before the extra args' -J: the first hop wins
    # (ssh itself refuses -J after a ProxyCommand; nodeprov names it as not applied)
    assert (g2.proxy_command, g2.proxy_jump) == ("ssh -W %h:%p jump", None)
    assert any("hosts.ini:3: ansible_ssh_extra_args: -o ProxyJump=admin@bastion.example.org:2222"
               " not applied: an earlier ProxyJump or ProxyCommand came first" in w
               for w in warnings)
    assert any("ServerAliveInterval=5 not applied" in w for w in warnings)


@pytest.mark.parametrize(("line", "variable", "fragment"), [
    ("h ansible_host=10.0.0.1 ansible_connection=local", "ansible_connection", "SSH only"),
    ("h ansible_host=10.0.0.1 ansible_ssh_pass=x", "ansible_ssh_pass", "password auth"),
    ("h ansible_host=10.0.0.1 ansible_become_method=su", "ansible_become_method", "sudo only"),
    ("h ansible_host=10.0.0.1 ansible_ssh_common_args='-o ProxyJump=a;b'",
     "ansible_ssh_common_args", "ProxyJump="),
])
def test_connection_variables_nodeprov_cannot_honour_are_refused(
        tmp_path: Path, line: str, variable: str, fragment: str) -> None:
    path = write(tmp_path, "hosts.ini", f"[g]\n{line}\n[all:vars]\nnode_subnet=10.0.0.0/24\n")
    result = CliRunner().invoke(app, ["apply", str(path)])
    assert result.exit_code == 2
    assert f"hosts.ini:2: h: {variable}" in result.stderr and fragment in result.stderr


def test_match_exec_does_not_run_when_the_inventory_is_bad(tmp_path: Path) -> None:
    touched = tmp_path / "touched"
    write(tmp_path, "ssh_config", f'Match exec "touch {touched}"\n  Port 2222\n')
    path = write(tmp_path, "inventory.yaml", f"""\
all:
  vars: {{node_subnet: 10.0.0.0/24, ssh_config_file: {tmp_path / "ssh_config"}}}
  hosts:
    node1: {{ansible_host: 10.0.0.11}}
    node2: {{ansible_host: 10.0.0.12, rdzv_port: 0}}
""")
    result = CliRunner().invoke(app, ["apply", str(path)])
    assert result.exit_code == 2 and "rdzv_port" in result.stderr
    assert not touched.exists()


def test_a_damaged_vault_is_named_with_file_line_host_and_variable(tmp_path: Path) -> None:
    path = write(tmp_path, "group_vars/all.yml", """\
node_subnet: 10.0.0.0/24
ansible_become_password: !vault |
  $ANSIBLE_VAULT;1.1;AES256
  6134
""")
    write(tmp_path, "hosts.ini", "n1 ansible_host=10.0.0.1\n")
    with pytest.raises(InputError) as error:
        load_inventory(tmp_path / "hosts.ini")
    assert str(error.value).startswith(f"{path}:2: n1: ansible_become_password: not a valid "
                                       "vault")


@pytest.mark.parametrize(("name", "text", "fragment"), [
    ("deep.ini", "".join(f"[g{i}:children]\ng{i + 1}\n" for i in range(300)) + "[g300]\nh\n",
     "nested more than 100 deep"),
    ("deep.yml", "all:\n" + "".join("  " * (i + 1) + f"children:\n{'  ' * (i + 2)}g{i}:\n"
                                    for i in range(300)), "deep"),
    ("bomb.yml", "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n"
        for i in range(7)) + "all:\n  vars: {boom: *h}\n", "expands to more than"),
    ("range.ini", "[g]\nn[0:99999999]\n", "more than 100000 hosts"),
])
def test_hostile_input_is_one_line_exit_2(tmp_path: Path, name: str, text: str,
                                          fragment: str) -> None:
    path = write(tmp_path, name, text)
    result = CliRunner().invoke(app, ["inventory", str(path), "--list"])
    assert result.exit_code == 2, result.output
    assert fragment in result.stderr and len(result.stderr.splitlines()) == 1


def test_near_miss_of_a_nodeprov_variable_warns_with_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path, "hosts.ini",
                 "n1 ansible_host=10.0.0.1\n[all:vars]\nnode_subnet=10.0.0.0/24\nrdvz_port=1\n")
    warnings: list[str] = []
    inventory = load_inventory(path, warn=warnings.append)
    assert warnings == [f"{path}:4: rdvz_port: unknown variable; did you mean rdzv_port?"]
    assert inventory.hosts[0].vars["rdvz_port"] == 1  # kept, as Ansible keeps it


def test_jinja_is_templated_lazily_in_a_sandbox(tmp_path: Path) -> None:
    inventory = load_inventory(CORPUS / "jinja-values" / "inventory.yml")
    gpu1 = inventory.host("gpu1")
    assert gpu1.address == "10.5.0.11"
    assert gpu1.vars["fqdn"] == "gpu1.example.org" and gpu1.vars["first_gpu"] == "gpu1"
    path = write(tmp_path, "hosts.ini", "[all:vars]\nnode_subnet=10.0.0.0/24\n[g]\n"
                 "n1 ansible_host=10.0.0.1 venv_path=\"{{ ''.__class__.__mro__ }}\"\n")
    with pytest.raises(InputError, match="hosts.ini:4: n1: venv_path: template error: .*unsafe"):
        load_inventory(path)


def test_an_inventory_template_stops_at_the_output_limit(tmp_path: Path) -> None:
    # 20 pieces of 4 M characters, each allowed alone: 80 M characters built at load before
    big = "{% for i in range(20) %}{{ 'x' * 4000000 }}{% endfor %}"
    path = write(tmp_path, "hosts.ini", "[all:vars]\nnode_subnet=10.0.0.0/24\n[g]\n"
                 f"n1 ansible_host=10.0.0.1 venv_path=\"{big}\"\n")
    with pytest.raises(InputError, match="n1: venv_path: template error: .*over the limit"):
        load_inventory(path)


def test_list_output_and_a_script_read_back_the_same(tmp_path: Path) -> None:
    script = CORPUS / "script-inventory" / "inventory.py"
    printed = CliRunner().invoke(app, ["inventory", str(script), "--list"]).stdout
    saved = write(tmp_path, "inventory.json", printed)
    again = CliRunner().invoke(app, ["inventory", str(saved), "--list"]).stdout
    assert json.loads(again) == json.loads(printed)
    assert load_inventory(saved).host("g1").vars["rdzv_port"] == 29900


PATTERN_CASE = CORPUS / "docs-yaml-multiple-groups" / "inventory.yaml"


@pytest.mark.parametrize("pattern", [
    "webservers:dbservers", "webservers,dbservers", "webservers:&east", "webservers:!east",
    "!east", "~(one|two)\\.example", "dbservers[0]", "dbservers[0:1]", "dbservers[-1]",
    "*.example.com", "prod:test", "all:!ungrouped",
])
def test_patterns_select_what_ansible_selects(pattern: str, tmp_path: Path) -> None:
    ours = select(read_inventory(PATTERN_CASE).data, pattern)
    assert sorted(ours) == sorted(list_hosts(PATTERN_CASE, pattern, tmp_path))


EMPTY_UNGROUPED = CORPUS / "ceph-all-daemons" / "hosts"  # every host is in a group


@pytest.mark.parametrize("pattern", ["all:!ungrouped", "!ungrouped", "mons:!ungrouped",
                                     "osds,!ungrouped"])
def test_excluding_a_group_without_hosts_excludes_nothing_as_in_ansible(
        pattern: str, tmp_path: Path) -> None:
    ours = select(read_inventory(EMPTY_UNGROUPED).data, pattern)
    assert ours == list_hosts(EMPTY_UNGROUPED, pattern, tmp_path)
    assert ours


@pytest.mark.parametrize("pattern", ["ungrouped", "mons:&ungrouped", "ungro*"])
def test_selecting_only_groups_without_hosts_says_so(pattern: str) -> None:
    # Ansible selects no host, silently; nodeprov stops, naming the empty group
    with pytest.raises(InputError, match=r"matches only groups without hosts \(ungrouped\); "
                                         "add hosts to them or name another group"):
        select(read_inventory(EMPTY_UNGROUPED).data, pattern)


def test_limit_file_and_a_pattern_matching_nothing(tmp_path: Path) -> None:
    data = read_inventory(PATTERN_CASE).data
    limit = write(tmp_path, "retry", "one.example.com\ntwo.example.com\n")
    assert select(data, f"@{limit}", limit_files=True) == ["one.example.com", "two.example.com"]
    with pytest.raises(InputError, match="pattern '!gpu' matches no host or group"):
        select(data, "!gpu")


@pytest.mark.parametrize(("case", "host", "var"), [
    ("jinja-values/inventory.yml", "gpu1", "fqdn"),
    ("jinja-values/inventory.yml", "gpu1", "first_gpu"),
    ("jinja-values/inventory.yml", "gpu1", "ansible_host"),
    ("k3s-io-inventory-sample/inventory-sample.yml", "192.16.35.12", "api_endpoint"),
    ("homelab-yaml/inventory.yml", "pi-01", "ansible_ssh_private_key_file"),
])
def test_templated_values_match_ansible(case: str, host: str, var: str, tmp_path: Path) -> None:
    source = CORPUS / case
    resolved = read_inventory(source)
    ours = HostTemplar(resolved).value(host, var)
    assert ours == templated(source, host, var, tmp_path)


UNSAFE = """all:
  vars:
    node_subnet: 10.0.0.0/24
    secret: s
  hosts:
    n1:
      ansible_host: 10.0.0.1
      ansible_become_password: !unsafe 'p{{ secret }}%{%'
      uses: '{{ ansible_become_password }}'
      listed: !unsafe ['{{ secret }}', 2]
      number: !unsafe 29500
"""


@pytest.mark.parametrize("var", ["ansible_become_password", "uses", "listed", "number",
                                 "from_ini"])
def test_text_marked_unsafe_is_never_templated_as_in_ansible(var: str, tmp_path: Path) -> None:
    # !unsafe in YAML, and a bytes literal in INI, which Ansible reads as untrusted text
    source = write(tmp_path, "hosts.yml", UNSAFE)
    if var == "from_ini":
        source = write(tmp_path, "hosts.ini", "n1\n[all:vars]\nsecret=s\n"
                       "from_ini=b'{{ secret }}'\n")
    ours = HostTemplar(read_inventory(source)).value("n1", var)
    assert ours == templated(source, "n1", var, tmp_path)
    if var == "ansible_become_password":
        assert load_inventory(source).host("n1").become_password == "p{{ secret }}%{%"


def test_group_vars_beside_the_playbook_come_after_the_inventorys(tmp_path: Path) -> None:
    inventory = write(tmp_path, "inventory/hosts.ini", "[gpu]\nn1 ansible_host=10.0.0.1\n")
    write(tmp_path, "inventory/group_vars/all.yml", "node_subnet: 10.0.0.0/24\nrdzv_port: 1\n")
    write(tmp_path, "site/group_vars/gpu.yml", "rdzv_port: 29700\n")
    write(tmp_path, "site/host_vars/n1.yml", "ansible_user: ops\n")
    host = load_inventory(inventory, tmp_path / "site").host("n1")
    assert (host.vars["rdzv_port"], host.user) == (29700, "ops")
    playbook = write(tmp_path, "site/play.yaml", "- name: p\n  hosts: gpu\n  tasks: []\n")
    write(tmp_path, "site/host_vars/n1.yml", "ansible_user: ops\nrdzv_port: 0\n")
    result = CliRunner().invoke(app, ["apply", str(inventory), "-p", str(playbook)])
    assert result.exit_code == 2
    assert f"{tmp_path / 'site/host_vars/n1.yml'}:2: n1: rdzv_port:" in result.stderr


def test_a_plays_hosts_take_ansible_patterns(tmp_path: Path) -> None:
    inventory = load_inventory(CORPUS / "yaml-repeated-group" / "inventory.yaml")
    play = write(tmp_path, "play.yaml", "- name: p\n  hosts: 'cluster:&gpu:!gpu2'\n  tasks: []\n")
    assert [host.name for host in load_playbook(play, inventory).plays[0].hosts] == ["gpu1"]
    play.write_text("- name: p\n  hosts: tpu\n  tasks: []\n")
    with pytest.raises(InputError, match="pattern 'tpu' matches no host or group"):
        load_playbook(play, inventory)


def test_connection_variables_nodeprov_does_not_apply_are_named_in_a_warning(
        tmp_path: Path) -> None:
    path = write(tmp_path, "hosts.ini", "[g]\nn1 ansible_host=10.0.0.1 "
                 "ansible_host_key_checking=False ansible_ssh_args='-C -o Port=2200'\n"
                 "n2 ansible_host=10.0.0.2 ansible_ssh_host_key_checking=True "
                 "ansible_hostname=n2 ansible_becom=true ansible_ssh_pipelining=true\n"
                 "[all:vars]\nnode_subnet=10.0.0.0/24\n")
    warnings: list[str] = []
    inventory = load_inventory(path, warn=warnings.append)
    assert warnings == [
        f"{path}:2: ansible_ssh_args: -C not applied: nodeprov applies ProxyJump, "
        "ProxyCommand, the port, -F and the host-key options (put others in ssh_config_file)",
        f"{path}:3: ansible_becom: unknown variable; did you mean ansible_become?",
        f"{path}:3: ansible_ssh_pipelining: not applied: nodeprov connects with paramiko, not "
        "the ssh program; use ssh_config_file"]
    # host key checking and the port of ssh arguments are applied now
    n1, n2 = inventory.hosts
    assert (n1.accept_new_host_key, n1.port) == (True, 2200)
    assert (n2.accept_new_host_key, n2.port) == (False, None)


@pytest.mark.parametrize(("name", "text", "message"), [
    ("hosts", "\ufeff[gpu]\nnode1\n", "hosts:1: the file starts with a byte-order mark"),
    ("hosts.yml", "all:\n  hosts:\n    h: {}\n---\nall: {}\n",
     "hosts.yml:4: a second YAML document (---) starts here; keep one per file"),
    ("list.yml", "all:\n  hosts: [a, b]\n", "hosts: must be a mapping (name: value), not a list"),
])
def test_messages_name_what_a_person_wrote(tmp_path: Path, name: str, text: str,
                                           message: str) -> None:
    (tmp_path / name).write_text(text, encoding="utf-8")
    result = CliRunner().invoke(app, ["inventory", str(tmp_path / name), "--list"])
    assert result.exit_code == 2 and message in result.stderr, result.output


@pytest.mark.parametrize(("name", "text"), [
    ("inv.yml", "all:\n  vars:\n    node_subnet: 10.0.0.0/24\n    python_version: 3.10\n"
                "  hosts:\n    n1: {ansible_host: 10.0.0.2}\n"),
    ("hosts", "[all:vars]\nnode_subnet=10.0.0.0/24\npython_version=3.10\n[gpu]\n"
              "n1 ansible_host=10.0.0.2\n"),
])
def test_an_unquoted_python_version_is_refused_as_the_number_it_reads_as(
        tmp_path: Path, name: str, text: str) -> None:
    # YAML and Ansible's INI both read 3.10 as 3.1: taken as a version, every python passes
    (tmp_path / name).write_text(text)
    with pytest.raises(InputError, match=r"python_version: 3\.1 is a number, not a version "
                       r"\(3\.10 reads as 3\.1\): quote it"):
        load_inventory(tmp_path / name)


def test_ssh_arguments_give_hops_config_and_known_hosts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cfg").write_text("Host bastion\n  User jump\n")
    path = write(tmp_path, "hosts.ini", "n1 ansible_host=10.0.0.1 ansible_ssh_common_args='-o "
                 "UserKnownHostsFile=/dev/null -o StrictHostKeyChecking=no -F cfg -J bastion'\n"
                 "[all:vars]\nnode_subnet=10.0.0.0/24\n")
    (host,) = load_inventory(path).hosts
    assert (host.known_hosts_files, host.accept_new_host_key, host.proxy_jump) == (
        ("/dev/null",), True, "bastion")
    assert host.vars["ssh_config_file"] == str(tmp_path / "cfg")  # as ssh reads -F: from here


def test_an_ssh_config_that_is_not_there_is_refused_where_it_is_named(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # it was found only when connecting: "unreachable ... (is sshd running and the address
    # right?)", though no node had been asked anything
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    path = write(tmp_path, "inv.yml", "all:\n  vars: {node_subnet: 10.0.0.0/24}\n  hosts:\n"
                 "    n1:\n      ansible_host: 10.0.0.1\n"
                 "      ansible_ssh_common_args: -F ~/.lima/default/ssh.config\n")
    with pytest.raises(InputError) as refused:
        load_inventory(path)
    assert str(refused.value) == (
        f"{path}:6: n1: ansible_ssh_common_args: -F ~/.lima/default/ssh.config: "
        f"{tmp_path}/home/.lima/default/ssh.config is not a file")
    (tmp_path / "home/.lima/default").mkdir(parents=True)  # ~ is this user's home
    (tmp_path / "home/.lima/default/ssh.config").write_text("Host n1\n  Port 60022\n")
    (host,) = load_inventory(path).hosts
    assert host.vars["ssh_config_file"] == f"{tmp_path}/home/.lima/default/ssh.config"
    write(tmp_path, "inv.yml", "all:\n  vars: {node_subnet: 10.0.0.0/24}\n  hosts:\n"
          "    n1: {ansible_host: 10.0.0.1, ssh_config_file: missing/ssh_config}\n")
    with pytest.raises(InputError, match=rf"^{path}:4: n1: ssh_config_file: "
                       rf"{tmp_path}/missing/ssh_config is not a file$"):
        load_inventory(path)


def test_ssh_minus_f_none_reads_no_ssh_config_at_all(tmp_path: Path) -> None:
    path = write(tmp_path, "hosts", "n1 ansible_host=10.0.0.1 ansible_ssh_args='-F none'\n"
                 "[all:vars]\nnode_subnet=10.0.0.0/24\n")
    (host,) = load_inventory(path).hosts
    assert host.vars["ssh_config_file"] == os.devnull
    parsed = SshConfigs().parsed(os.devnull)
    assert parsed is not None and parsed.get_hostnames() == {"*"}  # empty: nothing of ~/.ssh
