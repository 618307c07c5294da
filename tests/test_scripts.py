"""README's two commands: as typed on a root machine without sudo, and for a user with sudo;
CI runs exactly README's test command."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
BECOME_ROOT = ROOT / "scripts" / "become-root.sh"


def quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("## Quick start"):]
    block = re.search(r"```sh\n(.*?)```", section, re.DOTALL)
    assert block is not None
    return block.group(1).splitlines()


def test_readme_commands_need_no_sudo_and_ci_runs_the_test_command() -> None:
    assert quick_start_commands() == ["bash scripts/try-it.sh", "bash scripts/test.sh"]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert ci[-1] == "exec bash scripts/test.sh"
    for script in ("try-it.sh", "test.sh"):
        assert 'source "$(dirname "$0")/become-root.sh"' in (ROOT / "scripts" / script).read_text()


@pytest.fixture
def tmp_path() -> Iterator[Path]:
    """A folder another user can read (pytest's own are private to root)."""
    with tempfile.TemporaryDirectory() as name:
        Path(name).chmod(0o755)
        yield Path(name)


def caller(tmp_path: Path) -> Path:
    """A script that needs root, as try-it.sh and test.sh start."""
    script = tmp_path / "needs-root.sh"
    script.write_text(f'set -euo pipefail\nsource {BECOME_ROOT}\necho "as $(id -u): $*"\n')
    script.chmod(0o755)
    return script


def path_with(tmp_path: Path, sudo: bool) -> str:
    """A PATH with bash and id, and a sudo that says how it was called, or none."""
    tools = tmp_path / "bin"
    tools.mkdir()
    for tool in ("bash", "id"):
        (tools / tool).symlink_to(shutil.which(tool) or tool)
    if sudo:
        (tools / "sudo").write_text('#!/bin/sh\necho sudo; printf "%s\\n" "$@"\n')
        (tools / "sudo").chmod(0o755)
    return str(tools)


SETPRIV = shutil.which("setpriv") or "setpriv"
needs_root = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                                reason="needs root and setpriv to act as another user")


@pytest.mark.parametrize("sudo", [False, True])
@needs_root
def test_root_runs_the_script_itself_with_or_without_sudo(tmp_path: Path, sudo: bool) -> None:
    done = subprocess.run(["bash", str(caller(tmp_path)), "a b"], capture_output=True, text=True,
                          env={"PATH": path_with(tmp_path, sudo)}, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "as 0: a b\n", "")


@needs_root
def test_a_user_runs_it_again_through_sudo_with_the_same_arguments(tmp_path: Path) -> None:
    script = caller(tmp_path)
    done = subprocess.run([SETPRIV, "--reuid=65534", "--regid=65534", "--clear-groups",
                           "bash", str(script), "a b"], capture_output=True, text=True,
                          env={"PATH": path_with(tmp_path, sudo=True)}, check=False)
    assert (done.returncode, done.stdout) == (0, f"sudo\n--\nbash\n{script}\na b\n"), done.stderr


@needs_root
def test_a_user_without_sudo_is_told_to_run_it_as_root(tmp_path: Path) -> None:
    script = caller(tmp_path)
    done = subprocess.run([SETPRIV, "--reuid=65534", "--regid=65534", "--clear-groups",
                           "bash", str(script)], capture_output=True, text=True,
                          env={"PATH": path_with(tmp_path, sudo=False)}, check=False)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr == (f"{script}: needs root (namespaces for the local test cluster): "
                           "run it as root, or install sudo\n")
