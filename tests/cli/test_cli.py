"""The CLI surface: help on every command, inventory resolution, exit codes."""

from __future__ import annotations

import ast
import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
import typer.main
from typer.testing import CliRunner

import nodeprov
from nodeprov.cli import app
from tests.report_schema import assert_valid


@pytest.mark.parametrize(("command", "options"), [
    ("apply", ["--check", "--diff", "--limit", "--tags", "--skip-tags", "--extra-vars",
               "--list-hosts", "--list-tasks", "--json", "--forks", "--playbook",
               "--accept-new-host-keys"]),
    ("facts", ["--json", "--limit", "--forks", "--accept-new-host-keys", "--extra-vars"]),
    ("verify", ["--json", "--limit", "--forks", "--accept-new-host-keys", "--no-job",
                "--extra-vars", "--playbook"]),
    ("testbed", ["up", "down", "status", "exec"]),
])
def test_help_explains_every_option(command: str, options: list[str]) -> None:
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for option in options:
        assert option in result.stdout


def every_command(group: Any, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The argv of every command and sub-command (``testbed up``), groups included."""
    found = [path]
    for name, command in getattr(group, "commands", {}).items():
        found += every_command(command, (*path, name))
    return found


@pytest.mark.parametrize("path", every_command(typer.main.get_command(app)), ids=" ".join)
def test_every_help_renders_its_text_as_written(path: tuple[str, ...]) -> None:
    # Typer reads help as rich markup: `testbed up`'s example "pip_find_links=[/opt/wheels]"
    # was a closing tag, and --help died in a MarkupError traceback
    result = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.stdout
    if path == ("testbed", "up"):
        assert "--var 'pip_find_links=[/opt/wheels]'" in result.stdout


def test_version_is_the_installed_packages() -> None:
    """One version, written once (nodeprov.__version__), is what pip installed and what
    --version says."""
    result = CliRunner().invoke(app, ["--version"])
    assert (result.exit_code, result.stdout) == (0, f"nodeprov {nodeprov.__version__}\n")
    assert importlib.metadata.version("nodeprov") == nodeprov.__version__


def test_top_level_help_documents_exit_codes() -> None:
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert ("Exit codes: 0 all good, 1 a host failed or a check failed, 2 invalid input, 130 "
            "Ctrl-C, 141 the reader of the output went away (| head).") in (
        " ".join(result.stdout.split()))


def test_inventory_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("NODEPROV_INVENTORY", str(tmp_path / "from-env.yaml"))
    result = CliRunner().invoke(app, ["apply", "--check"])
    assert result.exit_code == 2
    assert f"{tmp_path}/from-env.yaml: file not found" in result.stderr


def test_no_inventory_anywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NODEPROV_INVENTORY", raising=False)
    result = CliRunner().invoke(app, ["facts"])
    assert result.exit_code == 2
    assert ("no inventory: give a path, set inventory in ansible.cfg, set NODEPROV_INVENTORY, "
            "or create ./inventory.yaml") in result.stderr


def loaded_after(statement: str, prefixes: tuple[str, ...]) -> list[str]:
    """Modules starting with ``prefixes`` that a fresh interpreter has loaded after running
    ``statement``."""
    code = (f"import sys; {statement}; "
            f"print(sorted(m for m in sys.modules if m.startswith({prefixes!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    return list(ast.literal_eval(out))


def test_help_does_not_import_fabric() -> None:
    assert loaded_after("from nodeprov.cli import app",
                        ("fabric", "paramiko", "invoke", "jinja2")) == []


def test_apply_and_verify_load_the_job_modules_only_for_the_job() -> None:
    assert loaded_after("import nodeprov.commands.apply, nodeprov.commands.verify",
                        ("nodeprov.job", "nodeprov.proof", "rich.live")) == []


# --- one meaning per option on every command ----------------------------------------------------

SHARED = ["--limit", "--forks", "--accept-new-host-keys", "--json", "--extra-vars"]
APPLY_ONLY = ["--tags", "--skip-tags", "--list-hosts", "--list-tasks"]


def params(command: str) -> dict[str, Any]:
    """The command's options by their long name, as Typer built them."""
    click_command = typer.main.get_command(app)
    found = click_command.commands[command].params  # type: ignore[attr-defined]
    return {name: param for param in found for name in param.opts if name.startswith("--")}


def test_shared_options_are_one_definition_on_every_command() -> None:
    apply, facts, verify = params("apply"), params("facts"), params("verify")
    for option in SHARED:
        same = {(p.help, p.metavar, tuple(p.opts), p.default)
                for p in (apply[option], facts[option], verify[option])}
        assert len(same) == 1, f"{option} differs: {same}"
    assert set(APPLY_ONLY) <= set(apply)
    assert apply["--playbook"].help == verify["--playbook"].help  # one definition


def test_html_is_one_definition_on_every_command_that_writes_a_report() -> None:
    found = {(p.help, p.metavar, tuple(p.opts), p.default)
             for command in ("apply", "verify", "run", "report")
             for p in [params(command)["--html"]]}
    assert len(found) == 1, found


ANSIBLE = ["--vault-id", "--vault-password-file", "--ask-vault-pass", "--ask-become-pass",
           "--become", "--become-user", "--user", "--private-key", "--timeout"]


def last_options(command: str, count: int) -> list[tuple[Any, ...]]:
    """The command's last ``count`` options as its help shows them, in order."""
    found = typer.main.get_command(app).commands[command].params  # type: ignore[attr-defined]
    return [(p.opts, p.secondary_opts, p.help, p.metavar, p.default) for p in found[-count:]]


def test_the_ansible_options_are_one_set_on_every_command_that_connects() -> None:
    expected = last_options("apply", len(ANSIBLE))
    assert [opts[0] for opts, *_ in expected] == ANSIBLE
    assert last_options("facts", len(ANSIBLE)) == last_options("verify", len(ANSIBLE)) == expected
    ran = last_options("run", len(ANSIBLE))  # run's --timeout is the job's: -T is its own name
    assert ran[:-1] == expected[:-1] and ran[-1][0] == ["--connect-timeout", "-T"]


@pytest.mark.parametrize(("command", "function", "words"), [
    ("apply", "run_apply", []), ("facts", "run_facts", []), ("verify", "run_verify", []),
    ("run", "run_command", ["--timeout", "9", "--", "train.py"])])
def test_the_ansible_options_reach_the_command_as_one_set(
        command: str, function: str, words: list[str], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from nodeprov.commands.requests import Request, RunCommandRequest
    from nodeprov.config.defaults import AnsibleOptions, CommandLine

    given: list[Any] = []

    def command_module(*args: Any, **kwargs: Any) -> int:
        given.extend(args)
        return 0

    monkeypatch.setattr(f"nodeprov.commands.{command}.{function}", command_module)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "key").write_text("")  # --key-file names a file that exists
    result = CliRunner().invoke(app, [
        command, "inventory.yaml", "--vault-id", "ops@pw-ops", "--vault-pass-file", "pw", "-J",
        "-K", "-b", "--become-user", "root", "-u", "deploy", "--key-file", "key", "-T", "7",
        *words])
    assert result.exit_code == 0, result.output
    assert [a.ansible for a in given if isinstance(a, Request)] == [AnsibleOptions(
        vault_ids=("ops@pw-ops",), vault_password_files=(str(tmp_path / "pw"),),
        ask_vault_pass=True, ask_become_pass=True, command_line=CommandLine(
            user="deploy", private_key=str(tmp_path / "key"), timeout=7, become=True,
            become_user="root"))]
    requests = [a.job.timeout for a in given if isinstance(a, RunCommandRequest)]
    assert requests == ([9] if command == "run" else [])  # run's --timeout: the job's deadline


UNREACHABLE = """\
all:
  vars: {{node_subnet: 127.0.0.0/8, ansible_port: 1, ssh_config_file: {config}}}
  hosts:
    node1: {{ansible_host: 127.0.0.1}}
"""
PLAYS = """\
- name: notices
  hosts: all
  tasks:
    - {name: motd, block: {path: /etc/motd, name: motd, lines: [a]}, tags: [motd]}
    - {name: issue, block: {path: /etc/issue, name: issue, lines: [a]}, tags: [issue, motd]}
- name: Prove the cluster can train
  hosts: all
  job: {}
  tags: [job]
"""


@pytest.fixture
def nowhere(tmp_path: Path) -> Path:
    """An inventory whose one node refuses connections at once (127.0.0.1 port 1)."""
    (tmp_path / "ssh_config").write_text("")
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(UNREACHABLE.format(config=tmp_path / "ssh_config"))
    (tmp_path / "plays.yaml").write_text(PLAYS)
    return inventory


@pytest.mark.parametrize("command", ["apply", "facts", "verify"])
def test_json_dash_puts_only_the_report_on_stdout(command: str, nowhere: Path) -> None:
    extra = ["--no-job"] if command == "verify" else []
    result = CliRunner().invoke(app, [command, str(nowhere), "--json", "-", *extra])
    assert result.exit_code == 1, result.output
    document = json.loads(result.stdout)  # the whole of stdout is the report
    assert_valid(document)
    assert (document["command"], document["ok"]) == (command, False)
    assert "cannot connect to 127.0.0.1:1" in json.dumps(document)


@pytest.mark.parametrize("command", ["apply", "facts", "verify"])
def test_json_path_writes_the_report_and_the_text_goes_to_stdout(
        command: str, nowhere: Path, tmp_path: Path) -> None:
    extra = ["--no-job"] if command == "verify" else []
    path = tmp_path / "report.json"
    result = CliRunner().invoke(app, [command, str(nowhere), "--json", str(path), *extra])
    assert result.exit_code == 1
    assert json.loads(path.read_text())["command"] == command and result.stdout.strip()


@pytest.mark.parametrize("command", ["apply", "facts", "verify"])
def test_forks_below_one_and_unknown_limits_are_usage_errors(command: str,
                                                             nowhere: Path) -> None:
    assert CliRunner().invoke(app, [command, str(nowhere), "--forks", "0"]).exit_code == 2
    result = CliRunner().invoke(app, [command, str(nowhere), "--limit", "node9"])
    assert result.exit_code == 2 and "node9" in result.stderr


@pytest.mark.parametrize("command", ["apply", "facts", "verify"])
def test_a_bad_extra_var_exits_2_before_any_connection(command: str, nowhere: Path) -> None:
    result = CliRunner().invoke(app, [command, str(nowhere), "-e", "rdzv_port=0"])
    assert result.exit_code == 2
    assert result.stderr == ("nodeprov: -e/--extra-vars rdzv_port: 0 is not a port; expected an "
                             "integer from 1 to 65535\n")


def listing(nowhere: Path, *options: str) -> list[str]:
    result = CliRunner().invoke(app, ["apply", str(nowhere), "-p",
                                      str(nowhere.with_name("plays.yaml")), *options])
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()


def test_list_tasks_shows_a_playbooks_escapes_and_markup_as_text(tmp_path: Path,
                                                                  nowhere: Path) -> None:
    """A task, play or tag named with terminal escapes or rich markup is listed as text: the
    escapes spelled out (before, ESC reached the terminal as it was), the markup as typed."""
    plays = tmp_path / "hostile.yaml"
    plays.write_text('- name: "[bold]p\\x1b]0;title\\x07"\n  hosts: all\n  tasks:\n'
                     '    - name: "[red]t[/x] \\x1b[31mred"\n      tags: ["\\x9b2J"]\n'
                     '      block: {path: /etc/motd, lines: [hi]}\n')
    result = CliRunner().invoke(app, ["apply", str(nowhere), "-p", str(plays), "--list-tasks",
                                      "--skip-tags", "job"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[2:] == [
        "  play #1 (all): [bold]p\\x1b]0;title\\x07", "    tasks:",
        "      [red]t[/x] \\x1b[31mred  TAGS: [\\x9b2J]"]


def test_list_hosts_and_tasks_follow_limit_tags_and_skip_tags(nowhere: Path) -> None:
    plays = nowhere.with_name("plays.yaml")
    assert listing(nowhere, "--list-hosts") == [
        f"playbook: {plays}", "", "  play #1 (all): notices", "    pattern: all",
        "    hosts (1):", "      node1", "", "  play #2 (all): Prove the cluster can train",
        "    pattern: all", "    hosts (1):", "      node1"]
    assert listing(nowhere, "--list-tasks", "--skip-tags", "job,issue")[2:] == [
        "  play #1 (all): notices", "    tasks:", "      motd  TAGS: [motd]", "",
        "  play #2 (all): Prove the cluster can train", "    tasks:"]
    assert listing(nowhere, "--list-tasks", "--tags", "job,issue")[4:] == [
        "      issue  TAGS: [issue, motd]", "", "  play #2 (all): Prove the cluster can train",
        "    tasks:", "      verification job (matrix, torchrun)  TAGS: [job]"]
    # a limit that leaves no host is a usage error, as in Ansible, not an empty listing
    emptied = CliRunner().invoke(app, ["apply", str(nowhere), "--list-hosts", "--limit", "!node1"])
    assert emptied.exit_code == 2 and "'!node1' selects no host" in emptied.stderr


@pytest.mark.parametrize("command", ["apply", "facts", "verify"])
@pytest.mark.parametrize(("key", "said"), [
    ("missing", "missing: No such file or directory"), (".", ". is not a regular file"),
    ("/dev/zero", "/dev/zero is not a regular file")])
def test_a_private_key_that_is_no_file_is_exit_2_before_any_connection(
        command: str, key: str, said: str, nowhere: Path, monkeypatch: pytest.MonkeyPatch
        ) -> None:
    """Before, each host failed to connect (exit 1, 'is sshd running?'), or read /dev/zero
    forever."""
    monkeypatch.chdir(nowhere.parent)
    result = CliRunner().invoke(app, [command, str(nowhere), "--private-key", key])
    assert (result.exit_code, result.stderr) == (
        2, f"nodeprov: --private-key: {said}; give the SSH private key's file\n")



def test_a_private_key_this_user_cannot_read_is_exit_2(
        nowhere: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # root reads every file: the user's view of a key of mode 600 that is root's, simulated
    key = tmp_path / "id_ed25519"
    key.write_text("key")
    access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: str(path) != str(key) and access(
        path, mode, **kw))
    result = CliRunner().invoke(app, ["apply", str(nowhere), "--private-key", str(key)])
    assert (result.exit_code, result.stderr) == (
        2, f"nodeprov: --private-key: {key}: permission denied; give a key file this user can "
           "read\n")


def test_an_unreadable_inventory_is_nodeprovs_one_line_not_a_usage_box(
        nowhere: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # click's Path(readable=True) answered first, with its usage box; as a user nodeprov says
    # "INV: permission denied; make the file readable" (its reader's words, checked by hand)
    access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: str(path) != str(nowhere) and
                        access(path, mode, **kw))
    result = CliRunner().invoke(app, ["apply", str(nowhere), "--list-hosts"])
    assert result.exit_code == 0 and "node1" in result.stdout, result.output
