"""The run's logs: private from their creation, as the reports are (issue #34: they were
0755/0644 beside the inventory, the job's whole output readable by every local user)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodeprov.commands.run import writable
from nodeprov.userjob.ranklog import NodeLogs


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    before = os.umask(0o022)  # what a login shell has: 0755 folders, 0644 files
    yield
    os.umask(before)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_logs_folders_and_files_are_0700_and_0600(tmp_path: Path) -> None:
    root = writable(tmp_path / "runs")
    with NodeLogs(root / "nodeprov-run-1", ["node1", "node2"], lambda line: None) as logs:
        logs.streams["node1"][0].write("[rank0]: HF_TOKEN=hf_secret\n")
    assert mode(root) == mode(root / "nodeprov-run-1") == 0o700
    assert [mode(path) for path in logs.paths.values()] == [0o600, 0o600]
    assert logs.paths["node1"].read_text() == "[rank0]: HF_TOKEN=hf_secret\n"


def test_a_log_is_not_written_through_a_link(tmp_path: Path) -> None:
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "node1.log").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OSError):
        NodeLogs(tmp_path / "run", ["node1"], lambda line: None)
    assert not (tmp_path / "elsewhere").exists()
