"""README's and docs/testbed.md's commands that look at a test cluster run as written (issue #32:
README's ``nodeprov testbed exec node1 -- ufw status`` failed with ``no testbed at
/srv/nodeprov-testbed``, the cluster being where scripts/try-it.sh had put it).

Each page's cluster is brought up where that page says (README: where try-it.sh puts it;
testbed.md: its own ``up`` line), then every ``nodeprov testbed exec|status|down`` and
``ssh -F .../ssh_config`` command the page shows runs through bash exactly as printed, from
the repository's root with .venv/bin on PATH (as try-it.sh's user has it); a command holding a
placeholder (``<node address>``) is one to fill in and is left out. A page whose directory is
already in use (someone's cluster) is skipped rather than taken down.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from nodeprov.testbed.lifecycle import down, up
from tests.conftest import requires_root_namespaces

pytestmark = pytest.mark.integration

ROOT = Path(__file__).parents[1]
COMMAND = re.compile(r"(?:\.venv/bin/)?nodeprov testbed (?:exec|status|down)\b[^`\n#]*"
                     r"|ssh -F \S+/ssh_config \w+")


def shown_commands(page: Path) -> list[str]:
    """The page's commands that target a test cluster, in its order, ``down`` last."""
    found = [match.strip() for match in COMMAND.findall(page.read_text()) if "<" not in match]
    return sorted(dict.fromkeys(found), key=lambda command: " testbed down" in command)


def try_it_dir() -> Path:
    """Where scripts/try-it.sh brings the cluster up (its default, without NODEPROV_DEMO_DIR)."""
    script = (ROOT / "scripts" / "try-it.sh").read_text()
    found = re.search(r"dir=\$\{NODEPROV_DEMO_DIR:-(\S+)\}", script)
    assert found, "try-it.sh no longer says where its cluster goes"
    return Path(found.group(1))


def up_line_dir(page: Path) -> Path:
    found = re.search(r"nodeprov testbed up [^\n#]*--dir (\S+)", page.read_text())
    assert found, f"{page.name} shows no `nodeprov testbed up --dir`"
    return Path(found.group(1))


def test_the_pages_show_commands_to_run() -> None:
    assert ".venv/bin/nodeprov testbed exec node1 -- ufw status" in shown_commands(
        ROOT / "README.md")
    assert len(shown_commands(ROOT / "docs" / "testbed.md")) >= 3


@pytest.mark.parametrize(("page", "directory"), [
    ("README.md", try_it_dir()), ("docs/testbed.md", up_line_dir(ROOT / "docs/testbed.md"))])
def test_a_pages_cluster_commands_run_as_written(page: str, directory: Path) -> None:
    reason = requires_root_namespaces()
    if reason:
        pytest.skip(reason)
    if directory.exists() and any(directory.iterdir()):
        pytest.skip(f"{directory} is in use: a cluster of someone's is there")
    commands = shown_commands(ROOT / page)
    assert commands, f"{page} shows no command for the cluster"
    environment = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    up(directory, 3, outsider=True)  # try-it.sh and testbed.md: 3 nodes and the outsider
    try:
        for command in commands:
            done = subprocess.run(["bash", "-c", command], cwd=ROOT, env=environment,
                                  capture_output=True, text=True, timeout=60,
                                  stdin=subprocess.DEVNULL)
            assert done.returncode == 0, f"{page}: `{command}`: {done.stdout}{done.stderr}"
            if " testbed down" in command:
                assert done.stdout.startswith("removed the testbed in"), done.stdout
    finally:
        down(directory)
