"""``nodeprov run``'s arguments: checked before any connection (exit 2, one line naming the
option), and everything after ``--`` handed to the job untouched."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from nodeprov.cli import app
from nodeprov.commands import run
from nodeprov.commands.requests import RunCommandRequest
from nodeprov.errors import InputError
from nodeprov.userjob.runargs import RunRequest, parse_env, parse_nproc, parse_request

# what run_command was called with: the inventory sources, the job, the rest of the request
Ran = list[tuple[list[Path] | None, RunRequest, dict[str, Any]]]


def request(*command: str, **options: Any) -> RunRequest:
    given: dict[str, Any] = {"nproc": "auto", "chdir": None, "sync": None, "env": [],
                             "timeout": 0, "preflight": True}
    return parse_request(list(command), **(given | options))


def test_a_plain_request_keeps_the_command_as_argv() -> None:
    made = request("train.py", "--lr", "3e-4", "a b; rm -rf /")
    assert made.command == ("train.py", "--lr", "3e-4", "a b; rm -rf /")
    assert made.nproc is None and made.workdir == "" and made.timeout == 0 and made.preflight


def test_workdir_is_chdir_else_the_synced_directory(tmp_path: Path) -> None:
    assert request("t.py", sync=str(tmp_path)).workdir == str(tmp_path)
    assert request("t.py", sync=str(tmp_path), chdir="/srv/run/").workdir == "/srv/run"


@pytest.mark.parametrize(("pairs", "expected"), [
    (["OMP_NUM_THREADS=4"], (("OMP_NUM_THREADS", "4"),)),
    (["A=", "_B2=x=y z"], (("A", ""), ("_B2", "x=y z"))),
])
def test_env_pairs(pairs: list[str], expected: tuple[tuple[str, str], ...]) -> None:
    assert parse_env(pairs, {}) == expected


def test_a_name_alone_passes_this_machines_value() -> None:
    assert parse_env(["HF_TOKEN", "A=1"], {"HF_TOKEN": "hf_s3cret"}) == (
        ("HF_TOKEN", "hf_s3cret"), ("A", "1"))


@pytest.mark.parametrize(("pair", "says"), [
    ("NOTSET", "NOTSET is not set on this machine: give NOTSET=VALUE, or export NOTSET first"),
    ("1ABC=x", "'1ABC' is not a variable name"),
    ("A-B=x", "'A-B' is not a variable name"),
    ("=x", "'' is not a variable name"),
    ("A=two\nlines", "A: its value holds a newline or control character: give one line"),
    ("MULTI", "MULTI: its value holds a newline or control character"),
    ("NODEPROV_JOB_RUN=x", "NODEPROV_JOB_RUN is set by nodeprov itself"),
])
def test_bad_env_is_refused_naming_the_option_never_the_value(pair: str, says: str) -> None:
    with pytest.raises(InputError) as raised:
        parse_env([pair], {"MULTI": "s3cret\nline"})
    assert str(raised.value).startswith(f"--env: {says}")
    assert "two" not in str(raised.value) and "s3cret" not in str(raised.value)


@pytest.mark.parametrize(("text", "expected"), [("auto", None), ("1", 1), ("8", 8)])
def test_nproc(text: str, expected: int | None) -> None:
    assert parse_nproc(text) == expected


@pytest.mark.parametrize("text", ["0", "-1", "two", "1.5", "99999", ""])
def test_bad_nproc(text: str) -> None:
    with pytest.raises(InputError, match="--nproc-per-node: .* give auto or a number"):
        parse_nproc(text)


@pytest.mark.parametrize(("options", "field", "says"), [
    ({"chdir": "relative/dir"}, "--chdir", "not an absolute path"),
    ({"chdir": "/srv/../etc"}, "--chdir", "not an absolute path"),
    ({"sync": "/no/such/dir/here"}, "--sync", "is not a directory on this machine"),
    ({"timeout": -1}, "--timeout", "is negative"),
])
def test_bad_options(options: dict[str, Any], field: str, says: str) -> None:
    with pytest.raises(InputError, match=says) as raised:
        request("train.py", **options)
    assert str(raised.value).startswith(f"{field}: ")


@pytest.mark.parametrize(("command", "says"), [
    ((), "no script: give it after --"),
    (("--help",), "may not be empty or start with '-'"),
    (("train.py", "a\0b"), "NUL"),
])
def test_bad_script(command: tuple[str, ...], says: str) -> None:
    with pytest.raises(InputError, match=says):
        request(*command)


# --- through the CLI --------------------------------------------------------------------------

@pytest.fixture
def ran(monkeypatch: pytest.MonkeyPatch) -> Ran:
    """What the command would run, instead of connecting anywhere."""
    calls: Ran = []

    def record(asked: RunCommandRequest, redactor: Any) -> int:
        options = {f.name: getattr(asked, f.name) for f in fields(asked)}
        calls.append((options.pop("inventory"), options.pop("job"), options))
        return 0

    monkeypatch.setattr(run, "run_command", record)
    return calls


def test_words_after_dashdash_are_the_jobs_even_when_they_look_like_options(
        ran: Ran) -> None:
    result = CliRunner().invoke(app, ["run", "cluster.yaml", "--env", "A=1", "--timeout", "60",
                                      "--", "train.py", "--limit", "x", "--", "--json", "-"])
    assert result.exit_code == 0, result.output
    inventory, made, options = ran[0]
    assert inventory == [Path("cluster.yaml")]
    assert made.command == ("train.py", "--limit", "x", "--", "--json", "-")
    assert made.env == (("A", "1"),) and made.timeout == 60
    assert options["limit"] is None and options["json_path"] is None


def test_without_an_inventory_argument_the_script_is_not_taken_for_one(
        ran: Ran, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "inventory.yaml").write_text("all: {}\n")
    result = CliRunner().invoke(app, ["run", "--no-preflight", "--", "train.py"])
    assert result.exit_code == 0, result.output
    # no inventory given: the command opens the default (ansible.cfg's, ./inventory.yaml...)
    assert ran[0][0] is None and ran[0][1].command == ("train.py",)
    assert not ran[0][1].preflight


@pytest.mark.parametrize(("argv", "says"), [
    (["--env", "1X=2", "--", "t.py"], "nodeprov: --env: '1X' is not a variable name"),
    (["--nproc-per-node", "0", "--", "t.py"], "nodeprov: --nproc-per-node: '0' is not"),
    (["--chdir", "rel", "--", "t.py"], "nodeprov: --chdir: 'rel' is not an absolute path"),
    (["--"], "nodeprov: SCRIPT: no script: give it after --"),
])
def test_bad_input_exits_2_with_one_line_before_any_connection(
        ran: Ran, argv: list[str], says: str) -> None:
    result = CliRunner().invoke(app, ["run", "no-such-inventory.yaml", *argv])
    assert result.exit_code == 2
    assert result.output.startswith(says) and result.output.count("\n") == 1, result.output
    assert ran == []


def test_a_script_without_dashdash_is_a_usage_error(
        ran: Ran) -> None:
    # INVENTORY is repeatable (several sources, as Ansible merges them): train.py would be one
    result = CliRunner().invoke(app, ["run", "inventory.yaml", "train.py"])
    assert result.exit_code == 2 and "no script: give it after --" in result.output
    assert ran == []
