"""The testbed ``nodeprov run``'s integration tests share (tests/userjob/test_run*.py)."""

from __future__ import annotations

import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from runbed import SCRIPT
from typer.testing import CliRunner

from nodeprov.testbed.cluster import Testbed
from nodeprov.testbed.lifecycle import temporary
from tests.mirrors import LOCAL_MIRRORS
from tests.proof.test_connectivity import PLAYBOOK
from tests.proof.test_launch import INSTALL


@pytest.fixture(scope="session")
def run_bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Testbed]:
    """A private 3-node testbed with names, socket env and a torch venv on every node."""
    from nodeprov.cli import app

    with temporary(nodes=3, outsider=False, shared=LOCAL_MIRRORS) as bed:
        playbook = tmp_path_factory.mktemp("run") / "playbook.yaml"
        playbook.write_text(PLAYBOOK)
        applied = CliRunner().invoke(app, ["apply", str(bed.inventory_path), "-p", str(playbook)])
        assert applied.exit_code == 0, applied.output
        results: dict[str, subprocess.CompletedProcess[str]] = {}
        installs = [threading.Thread(target=lambda n=name: results.update(
            {n: bed.exec(n, *INSTALL, timeout=600)})) for name in bed.nodes]
        for thread in installs:
            thread.start()
        for thread in installs:
            thread.join()
        for name, done in results.items():
            assert done.returncode == 0, f"{name}: {done.stderr[-2000:]}"
        yield bed


@pytest.fixture
def code_dir(tmp_path: Path) -> Path:
    """The user's training directory on this machine, synced to the nodes."""
    directory = tmp_path / "train"
    directory.mkdir()
    shutil.copy(SCRIPT, directory / "train.py")
    return directory
