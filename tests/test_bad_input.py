"""A corpus of broken inventories and playbooks: each exits 2 with an error naming the file,
the line or field and the fix, prints no traceback, and opens no SSH connection."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from nodeprov.cli import app
from nodeprov.remote.session import Session
from tests.pipes import feeding

GOOD_INVENTORY = """\
all:
  vars:
    node_subnet: 10.0.0.0/24
  hosts:
    node1: {ansible_host: 10.0.0.11}
    node2: {ansible_host: 10.0.0.12}
"""
GOOD_PLAYBOOK = """\
- name: demo
  hosts: all
  tasks:
    - name: motd
      block: {path: /etc/motd, lines: ["hi {{ inventory_hostname }}"]}
"""


def inventory_with(line: str) -> str:
    return GOOD_INVENTORY.replace("    node_subnet: 10.0.0.0/24\n",
                                  "    node_subnet: 10.0.0.0/24\n" + line + "\n")


def playbook_with_task(task: str) -> str:
    return "- name: demo\n  hosts: all\n  tasks:\n" + task


# (case id, inventory text or bytes, playbook text or None, fragments the message must hold)
CASES: list[tuple[str, str | bytes, str | None, list[str]]] = [
    ("empty-inventory", "", None, ["inventory.yaml", "file is empty"]),
    ("comment-only", "# nothing\n", None, ["file is empty"]),
    ("binary-junk", b"\x7fELF\x02\x01\x01\x00\x00\x00", None, ["binary data"]),
    ("latin1", "all:\n  vars: {x: \xe9}\n".encode("latin-1"), None, ["not UTF-8"]),
    ("huge", "all:\n  vars:\n" + "    # padding\n" * 400_000, None, ["under 4 MiB"]),
    ("yaml-syntax", "all:\n  hosts: [\n", None, ["YAML syntax error", "inventory.yaml:"]),
    ("tab-indent", "all:\n\thosts: {}\n", None, ["YAML syntax error"]),
    ("list-top", "- all\n", None, ["a YAML inventory is a mapping of group names"]),
    ("hosts-as-list", "all:\n  vars: {node_subnet: 10.0.0.0/24}\n  hosts: [node1]\n", None, [":3:", "hosts: must be a mapping"]),
    ("no-hosts", "all:\n  vars: {node_subnet: 10.0.0.0/24}\n", None, ["no hosts"]),
    ("missing-subnet", "all:\n  hosts:\n    node1: {ansible_host: 10.0.0.11}\n", None, [":3:", "node_subnet is required"]),
    ("bad-cidr", GOOD_INVENTORY.replace("10.0.0.0/24", "10.0.0.0/33"), None, [":3:", "node_subnet", "not a valid CIDR"]),
    ("cidr-host-bits", GOOD_INVENTORY.replace("10.0.0.0/24", "10.0.0.5/24"), None, [":3:", "has host bits set"]),
    ("cidr-no-prefix", GOOD_INVENTORY.replace("10.0.0.0/24", "10.0.0.0"), None, ["write a network with its prefix"]),
    ("duplicate-host-key", GOOD_INVENTORY + "    node1: {ansible_host: 10.0.0.13}\n", None, [":7:", "duplicate key 'node1'"]),
    ("duplicate-address", GOOD_INVENTORY.replace("10.0.0.12", "10.0.0.11"), None, ["node2 and node1 have the same address 10.0.0.11"]),
    ("node-address-outside-subnet", GOOD_INVENTORY.replace("10.0.0.12}", "10.0.0.12, node_address: 10.9.0.12}"), None, [":6:", "node_address", "outside node_subnet 10.0.0.0/24"]),
    ("address-injection", GOOD_INVENTORY.replace("10.0.0.12", "'10.0.0.12;reboot'"), None, [":6:", "not an IP address or host name"]),
    ("hostname-injection", GOOD_INVENTORY.replace("node2:", "'node2$(id)':"), None, [":6:", "not a valid host name"]),
    ("hostname-space", GOOD_INVENTORY.replace("node2:", "'node 2':"), None, ["not a valid host name"]),
    ("port-zero", inventory_with("    rdzv_port: 0"), None, [":4:", "rdzv_port", "from 1 to 65535"]),
    ("port-text", inventory_with("    ansible_port: ssh"), None, [":4:", "ansible_port", "not a port"]),
    ("port-huge", inventory_with("    rdzv_port: 70000"), None, ["from 1 to 65535"]),
    ("ifname-injection", inventory_with("    nccl_socket_ifname: 'eth0; reboot'"), None, [":4:", "nccl_socket_ifname", "not an interface name"]),
    ("ifname-quote", inventory_with("    nccl_socket_ifname: \"eth0'\""), None, ["not an interface name"]),
    ("ifname-dash", inventory_with("    nccl_socket_ifname: -eth0"), None, ["not an interface name"]),
    ("ipv6-word", inventory_with("    ipv6: off"), None, [":4:", "ipv6", "enabled, disabled"]),
    ("venv-relative", inventory_with("    venv_path: opt/venv"), None, [":4:", "venv_path", "absolute path"]),
    ("venv-newline", inventory_with('    venv_path: "/opt/v\\nrm -rf /"'), None, ["venv_path", "absolute path"]),
    ("pip-option-injection", inventory_with("    pip_packages: ['--index-url=http://evil']"), None, ["pip_packages", "start with '-'"]),
    ("pip-not-list", inventory_with("    pip_packages: numpy"), None, ["pip_packages", "expected a list"]),
    ("env-name", inventory_with("    nccl_env: {'NCCL DEBUG': INFO}"), None, ["nccl_env", "not an environment variable name"]),
    ("env-newline", inventory_with('    nccl_env: {NCCL_DEBUG: "INFO\\nX=1"}'), None, ["nccl_env", "newline"]),
    ("user-injection", inventory_with("    ansible_user: 'root;id'"), None, ["ansible_user", "not a user name"]),
    ("become-word", inventory_with("    ansible_become: maybe"), None, ["ansible_become", "not a boolean"]),
    ("torch-cuda", inventory_with("    torch_cuda: cuda12"), None, ["torch_cuda", "auto, cpu or cuXYZ"]),
    ("playbook-empty", GOOD_INVENTORY, "", ["playbook.yaml", "file is empty"]),
    ("playbook-mapping", GOOD_INVENTORY, "name: x\n", ["a playbook is a list of plays"]),
    ("playbook-syntax", GOOD_INVENTORY, "- name: x\n  hosts: all\n  tasks: [\n", ["playbook.yaml:", "YAML syntax error"]),
    ("play-unknown-key", GOOD_INVENTORY, GOOD_PLAYBOOK + "  become: true\n", [":6:", "unknown play key 'become'"]),
    ("play-no-hosts", GOOD_INVENTORY, "- name: x\n  tasks: []\n", ["hosts: is required"]),
    ("play-hosts-unknown", GOOD_INVENTORY, "- name: x\n  hosts: gpus\n  tasks: []\n", [":2:", "pattern 'gpus' matches no host or group"]),
    ("unknown-task-type", GOOD_INVENTORY, playbook_with_task("    - name: t\n      shell: reboot\n"), [":5:", "unknown task type 'shell'", "valid: block"]),
    ("no-task-type", GOOD_INVENTORY, playbook_with_task("    - name: t\n      tags: [a]\n"), ["a task needs exactly one task type"]),
    ("unknown-param", GOOD_INVENTORY, playbook_with_task("    - name: t\n      block: {path: /a, mode: 777}\n"), [":5:", "unknown parameter 'mode'", "valid: path, name, lines, state"]),
    ("missing-param", GOOD_INVENTORY, playbook_with_task("    - name: t\n      block: {lines: [a]}\n"), ["block", "required parameter is missing", "path"]),
    ("wrong-param-type", GOOD_INVENTORY, playbook_with_task("    - name: t\n      block: {path: /a, lines: 5}\n"), [":5:", "expected a list"]),
    ("block-line-is-its-marker", GOOD_INVENTORY, playbook_with_task("    - name: t\n      block: {path: /a, lines: ['# END nodeprov managed']}\n"), [":5:", "lines", "is a marker of block 'managed'"]),
    ("bad-param-choice", GOOD_INVENTORY, playbook_with_task("    - name: t\n      block: {path: /a, state: gone}\n"), ["'gone' is not one of: present, absent"]),
    ("undefined-variable", GOOD_INVENTORY, playbook_with_task("    - name: t\n      block:\n        path: /a\n        lines: ['{{ cluster_name }}']\n"), [":7:", "undefined variable 'cluster_name'", "define it in the inventory"]),
    ("template-syntax", GOOD_INVENTORY, playbook_with_task("    - name: t\n      block: {path: '/a{{', lines: []}\n"), ["template syntax error"]),
    ("template-result-injection", inventory_with("    motd_path: 'relative; rm -rf /'"), playbook_with_task("    - name: t\n      block: {path: '{{ motd_path }}'}\n"), ["block.path", "absolute path"]),
    ("tags-not-words", GOOD_INVENTORY, playbook_with_task("    - name: t\n      block: {path: /a}\n      tags: [[x]]\n"), ["tags: must be a list of words"]),
    # issue #14: hostile inputs
    ("template-range", GOOD_INVENTORY, playbook_with_task("    - name: t\n      block: {path: /a, lines: '{{ range(10**8)|list }}'}\n"), [":5:", "block.lines", "100000 range items"]),
    ("template-nested-ranges", GOOD_INVENTORY, playbook_with_task("    - name: t\n      block: {path: /a, lines: ['{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}']}\n"), ["100000 range items"]),
    ("template-repeat", GOOD_INVENTORY, playbook_with_task("    - name: t\n      block: {path: /a, lines: [\"{{ 'x' * 10**10 }}\"]}\n"), ["over the template limit"]),
    ("template-power", GOOD_INVENTORY, playbook_with_task("    - name: t\n      block: {path: /a, lines: ['{{ 10 ** (10 ** 10) }}']}\n"), ["over the template limit"]),
    ("template-width", GOOD_INVENTORY, playbook_with_task("    - name: t\n      block: {path: /a, lines: [\"{{ 'x'|center(10**10) }}\"]}\n"), ["over the template limit"]),
    ("template-recursion", GOOD_INVENTORY, playbook_with_task("    - name: t\n      block: {path: /a, lines: ['{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}']}\n"), ["too deep"]),
    ("template-alias-bomb", inventory_with("    bomb0: &b0 [x, x, x, x, x, x, x, x, x, x]\n" + "".join(f"    bomb{i}: &b{i} [{', '.join([f'*b{i - 1}'] * 10)}]\n" for i in range(1, 9))), playbook_with_task("    - name: t\n      block: {path: /a, lines: ['{{ bomb8 }}']}\n"), ["inventory.yaml:", "expands to more than 1000000 values"]),
    ("yaml-alias-loop", inventory_with("    loop: &l [*l]"), None, ["inventory.yaml:4:", "alias refers to the collection it is in"]),
    ("playbook-deep", GOOD_INVENTORY, "- " + "[" * 300 + "]" * 300 + "\n", ["playbook.yaml", "nested"]),
    ("zone-id-hosts-line", GOOD_INVENTORY.replace("10.0.0.0/24", "'fd00::/64'").replace("10.0.0.11", "'fd00::11'").replace("10.0.0.12", "'fd00::12', node_address: \"fd00::12%x\\n6.6.6.6 pypi.org\""), None, ["node_address", "not an IP address", "zone id"]),
    ("zone-id-shell", GOOD_INVENTORY.replace("10.0.0.0/24", "'fd00::/64'").replace("10.0.0.11", "'fd00::11'").replace("10.0.0.12", "'fd00::12%eth0;$(reboot)'"), None, ["ansible_host", "not an IP address or host name"]),
    ("nccl-env-ld-preload", inventory_with("    nccl_env: {LD_PRELOAD: /tmp/evil.so}"), None, [":4:", "nccl_env", "LD_PRELOAD is not an NCCL variable", "NCCL_*"]),
    ("subnet-everything-v4", GOOD_INVENTORY.replace("10.0.0.0/24", "0.0.0.0/0"), None, [":3:", "node_subnet", "4294967296 addresses", "node_subnet_allow_wide"]),
    ("subnet-everything-v6", GOOD_INVENTORY.replace("10.0.0.0/24", "'::/0'").replace("10.0.0.11", "'fd00::11'").replace("10.0.0.12", "'fd00::12'"), None, [str(2**128), "node_subnet_allow_wide"]),
    ("subnet-wide-v4", GOOD_INVENTORY.replace("10.0.0.0/24", "10.0.0.0/7"), None, [str(2**25), "at most a /8"]),
    ("venv-root-in-disguise", inventory_with("    venv_path: /."), None, [":4:", "venv_path", "absolute path"]),
    ("venv-dot-dot", inventory_with("    venv_path: /opt/.."), None, ["venv_path", "absolute path"]),
    ("port-arabic-digits", inventory_with("    rdzv_port: '\u0662\u0669\u0665\u0660\u0660'"), None, ["rdzv_port", "not a port"]),
    ("timeout-arabic-digits", inventory_with("    job_timeout: '\u0661\u0662\u0660'"), None, ["job_timeout", "not a positive integer"]),
    ("torch-cuda-digits", inventory_with("    torch_cuda: 'cu\u0661\u0662\u0668'"), None, ["torch_cuda", "cuXYZ"]),
    ("block-line-separator", inventory_with("    motd: \"a\\u2028b\""), playbook_with_task("    - name: t\n      block: {path: /a, lines: ['{{ motd }}']}\n"), ["newline or control character"]),
    ("block-line-escape", inventory_with("    motd: \"\\e]0;owned\\a\\e[2J\""), playbook_with_task("    - name: t\n      block: {path: /a, lines: ['{{ motd }}']}\n"), ["newline or control character", "\\x1b"]),
    ("env-value-c1-escape", inventory_with("    nccl_env: {NCCL_DEBUG: \"\\x9b2J\"}"), None, ["nccl_env", "control character"]),
    # issue #23: host names are ASCII (RFC 1123); an address is never a number in disguise
    ("hostname-non-ascii", GOOD_INVENTORY.replace("node2:", "n\u00f6de2:"), None, [":6:", "n\u00f6de2", "ASCII letters"]),
    ("hostname-cyrillic-o", GOOD_INVENTORY.replace("node2:", "n\u043ede2:"), None, [":6:", "ASCII letters"]),
    ("hostname-leading-zeros", GOOD_INVENTORY.replace("    node2: {ansible_host: 10.0.0.12}", "    012.0.0.012: {}"), None, [":6:", "'012.0.0.012' is no host name", "the address 10.0.0.10"]),
    ("address-leading-zeros", GOOD_INVENTORY.replace("10.0.0.12", "012.99.0.011"), None, [":6:", "ansible_host", "the address 10.99.0.9", "without leading zeros"]),
    ("address-hex", GOOD_INVENTORY.replace("10.0.0.12", "0x0a00000c"), None, [":6:", "ansible_host", "the address 10.0.0.12"]),
    # a group name a terminal would act on or show reordered (the CLI sweep): refused at load
    ("group-bidi-override", 'all:\n  vars: {node_subnet: 10.0.0.0/24}\n  children:\n    "gr\\u202eoup[bold]": {hosts: {node1: {ansible_host: 10.0.0.1}}}\n', None, ["inventory.yaml:4:", "group name 'gr\\u202eoup[bold]'", "control or bidirectional character"]),
    ("group-escape", 'all:\n  vars: {node_subnet: 10.0.0.0/24}\n  children:\n    "g\\e[2J": {hosts: {node1: {ansible_host: 10.0.0.1}}}\n', None, ["inventory.yaml:4:", "group name 'g\\x1b[2J'"]),
    ("address-number-label", GOOD_INVENTORY.replace("10.0.0.12", "gpu.rack.12"), None, [":6:", "ansible_host", "last label is a number"]),
]


@pytest.mark.parametrize(("inventory", "playbook", "fragments"),
                         [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_bad_input_exits_2_with_a_pointed_message(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, inventory: str | bytes,
        playbook: str | None, fragments: list[str]) -> None:
    connections: list[str] = []
    monkeypatch.setattr(Session, "open", lambda self: connections.append(self.host.name))
    inventory_path = tmp_path / "inventory.yaml"
    if isinstance(inventory, bytes):
        inventory_path.write_bytes(inventory)
    else:
        inventory_path.write_text(inventory)
    playbook_path = tmp_path / "playbook.yaml"
    playbook_path.write_text(GOOD_PLAYBOOK if playbook is None else playbook)
    result = CliRunner().invoke(app, ["apply", str(inventory_path), "-p", str(playbook_path)])
    message = result.stderr
    assert result.exit_code == 2, message
    assert "Traceback" not in message + result.stdout
    assert message.count("\n") == 1, "one line a person can act on"
    for fragment in fragments:
        assert fragment in message
    assert str(tmp_path) in message
    assert connections == []


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 30


@pytest.mark.parametrize("value", ["eth0\n", "eth0\nreboot"])
def test_a_trailing_newline_is_not_an_interface_name(value: str) -> None:
    from nodeprov.util import validate

    with pytest.raises(ValueError, match="is not an interface name"):
        validate.interface_name(value)


def apply_files(tmp_path: Path, inventory: str, playbook: str, *extra: str) -> Any:
    (tmp_path / "inventory.yaml").write_text(inventory)
    (tmp_path / "playbook.yaml").write_text(playbook)
    return CliRunner().invoke(app, ["apply", str(tmp_path / "inventory.yaml"), "-p",
                                    str(tmp_path / "playbook.yaml"), *extra])


REACHES = {  # a template reaching for Python internals, each the way it ran code before #14
    "cycler": "{{ cycler.__init__.__globals__.os.system('touch MARKER') }}",
    "joiner": "{{ joiner.__init__.__globals__.os.popen('touch MARKER').read() }}",
    "lipsum": "{{ lipsum.__globals__['os'].system('touch MARKER') }}",
    "namespace": "{{ namespace.__init__.__globals__.__builtins__.exec("
                 "\"__import__('os').system('touch MARKER')\") }}",
    "subclasses": "{{ ''.__class__.__mro__[1].__subclasses__()|map(attribute='__name__')"
                  "|select('equalto', 'Popen')|list|first }}",
}


@pytest.mark.parametrize("where", ["task", "job"])
@pytest.mark.parametrize("reach", list(REACHES), ids=list(REACHES))
def test_a_template_reaching_for_internals_runs_nothing_and_exits_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reach: str, where: str) -> None:
    connections: list[str] = []
    monkeypatch.setattr(Session, "open", lambda self: connections.append(self.host.name))
    marker = tmp_path / "ran"
    template = REACHES[reach].replace("MARKER", str(marker))
    quoted = json.dumps(template)  # a JSON string is a YAML one
    if where == "task":
        playbook = playbook_with_task(f"    - name: t\n      block: {{path: /a, lines: [{quoted}]}}\n")
    else:
        playbook = f"- name: demo\n  hosts: all\n  job: {{venv_path: {quoted}}}\n"
    result = apply_files(tmp_path, GOOD_INVENTORY, playbook, "--check")
    assert result.exit_code == 2, result.output
    assert not marker.exists(), "the template ran code on this machine"
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output
    assert f"{tmp_path}/playbook.yaml:" in result.stderr
    assert "unsafe" in result.stderr or "undefined" in result.stderr
    assert "<class" not in result.stderr and "Popen" not in result.stderr.replace(
        "'Popen'", "")
    assert connections == []


def test_a_template_using_facts_that_reaches_for_internals_exits_2_before_connecting(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rendered only once connected (it needs the node's facts), it is refused when loaded."""
    connections: list[str] = []
    monkeypatch.setattr(Session, "open", lambda self: connections.append(self.host.name))
    for template in ("{{ facts.hostname ~ cycler.__init__.__globals__ }}",
                     "{{ facts['__class__'] }}", "{{ facts.hostname.__class__ }}"):
        result = apply_files(tmp_path, GOOD_INVENTORY, playbook_with_task(
            f"    - name: t\n      block: {{path: /a, lines: [{json.dumps(template)}]}}\n"))
        assert result.exit_code == 2, result.output
        assert "playbook.yaml:5:" in result.stderr and "unsafe" in result.stderr
    assert connections == []


def test_file_contents_never_reach_an_error_through_a_template(tmp_path: Path) -> None:
    for template in ("{{ open('/etc/passwd').read() }}",
                     "{{ ''.__class__.__mro__[1].__subclasses__() }}",
                     "{{ self.__init__.__globals__ }}"):
        result = apply_files(tmp_path, GOOD_INVENTORY, playbook_with_task(
            f"    - name: t\n      block: {{path: {json.dumps(template)}}}\n"))
        assert result.exit_code == 2, result.output
        assert "root:" not in result.stderr and "<class" not in result.stderr, result.stderr


def test_the_become_password_templated_into_a_checked_field_is_not_shown(
        tmp_path: Path) -> None:
    password = "Hunter-2-Correct-Horse"  # noqa: S105 - the test's own canary
    inventory = inventory_with(f"    ansible_become: true\n    ansible_become_password: {password}")
    for playbook in (
            playbook_with_task("    - name: t\n      block: {path: '{{ ansible_become_password }}'}\n"),
            playbook_with_task("    - name: t\n      block: {path: '{{ ansible_become_password "
                               "* 2 }}'}\n"),
            "- name: demo\n  hosts: all\n  job: {venv_path: 'x{{ ansible_become_password }}'}\n"):
        result = apply_files(tmp_path, inventory, playbook)
        assert result.exit_code == 2, result.output
        assert password not in result.output, result.output
        assert "***" in result.stderr


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/urandom"])
def test_a_playbook_that_never_ends_is_refused_by_its_size(tmp_path: Path, special: str) -> None:
    (tmp_path / "inventory.yaml").write_text(GOOD_INVENTORY)
    result = CliRunner().invoke(app, ["apply", str(tmp_path / "inventory.yaml"), "-p", special])
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output
    assert f"{special}: file is over" in result.stderr and "under 4 MiB" in result.stderr


def test_an_inventory_read_from_a_pipe_is_refused_by_its_size(tmp_path: Path) -> None:
    fifo = tmp_path / "inventory.yaml"
    feeding(fifo, b"# padding\n", 5 << 20)
    result = CliRunner().invoke(app, ["apply", str(fifo)])
    assert result.exit_code == 2, result.output
    assert "file is over" in result.stderr



# --- report paths (issue #23 point 7): checked before any connection, written privately -------

@pytest.mark.parametrize("command", ["apply", "facts", "verify", "run"])
@pytest.mark.parametrize("report", ["symlink", "missing-folder", "folder"])
def test_a_report_path_that_cannot_take_the_report_is_exit_2_before_any_connection(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, report: str) -> None:
    connections: list[str] = []
    monkeypatch.setattr(Session, "open", lambda self: connections.append(self.host.name))
    (tmp_path / "inventory.yaml").write_text(GOOD_INVENTORY)
    victim = tmp_path / "root-only"
    victim.write_text("precious\n")
    path = {"symlink": tmp_path / "report.json", "missing-folder": tmp_path / "no" / "r.json",
            "folder": tmp_path}[report]
    if report == "symlink":
        path.symlink_to(victim)
    job = ["--", "train.py"] if command == "run" else []
    result = CliRunner().invoke(app, [command, str(tmp_path / "inventory.yaml"), "--json",
                                      str(path), *job])
    assert result.exit_code == 2, result.output
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output
    assert f"--json: {path}" in result.stderr or f"--json: cannot write {path}" in result.stderr
    assert connections == [] and victim.read_text() == "precious\n"


def test_the_report_is_written_privately_and_replaces_a_symlink_made_meanwhile(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from nodeprov.commands import facts as facts_command
    from nodeprov.remote.facts import parse_facts
    from tests.reliability.test_hostile_nodes import GOOD

    (tmp_path / "inventory.yaml").write_text(GOOD_INVENTORY)
    report, victim = tmp_path / "facts.json", tmp_path / "root-only"
    victim.write_text("precious\n")

    def connect_all(hosts: Any, *args: Any) -> Any:
        report.symlink_to(victim)  # planted after the check, while the run goes on
        return {}, {host.name: parse_facts(GOOD) for host in hosts}, {}

    monkeypatch.setattr(facts_command, "connect_all", connect_all)
    result = CliRunner().invoke(app, ["facts", str(tmp_path / "inventory.yaml"), "--json",
                                      str(report)])
    assert result.exit_code == 0, result.output
    assert not report.is_symlink() and json.loads(report.read_text())["command"] == "facts"
    assert report.stat().st_mode & 0o777 == 0o600
    assert victim.read_text() == "precious\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == [
        "facts.json", "inventory.yaml", "root-only"]  # no temporary file left


# --- inventories that never end or nest without end (issue #23 point 7) ---------------------

ENDLESS_SCRIPT = "#!/bin/sh\n[ \"$1\" = --list ] && exec yes '{\"all\": {\"hosts\": [\"x\"]}}'\n"
DEEP_TOML = "[all.vars]\nx = " + "[" * 3000 + "]" * 3000 + "\n"


@pytest.mark.parametrize(("name", "text", "said"), [
    ("inventory.sh", ENDLESS_SCRIPT, "inventory.sh --list: inventory script printed over "
                                     "4194304 bytes; an inventory must be under 4 MiB"),
    ("inventory.toml", DEEP_TOML, "inventory.toml: nested too deeply to read; flatten the file"),
])
def test_an_inventory_without_end_is_one_line_and_exit_2(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, text: str, said: str) -> None:
    connections: list[str] = []
    monkeypatch.setattr(Session, "open", lambda self: connections.append(self.host.name))
    inventory = tmp_path / name
    inventory.write_text(text)
    inventory.chmod(0o755)
    for command in (["apply", str(inventory)], ["inventory", str(inventory), "--list"]):
        result = CliRunner().invoke(app, command)
        assert result.exit_code == 2, result.output
        assert result.stderr == f"nodeprov: {tmp_path}/{said}\n"
    assert connections == []
