import os
import shutil
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nodeprov.cli import app
from nodeprov.testbed import environment


@pytest.fixture
def missing_nsenter_as_user(monkeypatch: pytest.MonkeyPatch) -> None:
    which = shutil.which
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    monkeypatch.setattr(shutil, "which",
                        lambda name, *args, **kwargs: None if name == "nsenter" else which(name))


def test_problems_name_root_and_the_missing_tool_with_its_package(
        missing_nsenter_as_user: None) -> None:
    assert environment.problems() == [
        "root is needed (run it with sudo)",
        "nsenter not found on PATH (apt-get install util-linux)"]


def test_a_missing_sshd_names_openssh_server(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(environment, "sshd_path", lambda: None)
    assert any("sshd not found on PATH (apt-get install openssh-server)" in problem
               for problem in environment.problems())


def test_not_linux_is_one_problem(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert environment.problems() == ["Linux is needed (network, mount and PID namespaces)"]


def test_no_overlayfs_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(environment, "_overlay_supported", lambda: False)
    assert "the kernel has no overlayfs (modprobe overlay)" in environment.problems()


@pytest.mark.parametrize("command", [["up", "--nodes", "2"], ["down"],
                                     ["exec", "node1", "--", "true"]])
def test_cli_exits_2_with_one_line_saying_what_is_needed(
        missing_nsenter_as_user: None, tmp_path: Path, command: list[str]) -> None:
    directory = Path("/srv") / f"nodeprov-never-made-{tmp_path.name}"
    result = CliRunner().invoke(app, ["testbed", command[0], "--dir", str(directory),
                                      *command[1:]])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "nodeprov: testbed: root is needed (run it with sudo); nsenter not found on PATH "
        "(apt-get install util-linux)"]
    assert not directory.exists()
