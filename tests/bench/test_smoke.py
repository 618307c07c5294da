"""The benchmark's CI smoke run: every tool on 2 fresh nodes, once, no speed assertion.

The full benchmark (tests/bench/run.py, docs/performance.md) is not part of the test run; this
checks that it still runs to the end, that each tool reached the same end state, and that each
tool's second run reported zero changes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOOLS = ("nodeprov", "ansible", "pyinfra")
# Shared with the full benchmark: installing Ansible and pyinfra once is enough.
VENVS = Path("/srv/nodeprov-bench/venvs")


@pytest.mark.integration
def test_smoke_run_completes_and_every_second_run_changes_nothing() -> None:
    # a folder of its own: a full benchmark running at the same time keeps its testbed
    root = Path(tempfile.mkdtemp(prefix="nodeprov-bench-smoke-", dir="/srv"))
    try:
        done = subprocess.run([sys.executable, "-m", "tests.bench.run", "--smoke", "--root",
                               str(root), "--venvs", str(VENVS), "--json",
                               str(root / "bench.json")],
                              cwd=REPO, capture_output=True, text=True, timeout=1500,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr[-4000:] + done.stdout[-4000:]
        records = json.loads((root / "bench.json").read_text())["records"]
        assert not list((root).glob("testbed*")), "a testbed was left up"
    finally:
        shutil.rmtree(root, ignore_errors=True)

    ran = {(record["tool"], record["phase"]) for record in records}
    assert ran == {(tool, phase) for tool in TOOLS for phase in ("first", "venv", "again")} | {
        ("nodeprov", "floor"), ("nodeprov", "check"), ("nodeprov", "verify")}
    for record in records:
        assert record["ok"], f"{record['tool']} {record['phase']}: {record['problem']}"
        assert record["endstate"] == [], f"{record['tool']}: {record['endstate']}"
    first = {r["tool"]: r["changes"] for r in records if r["phase"] == "first"}
    assert all(changes and changes > 0 for changes in first.values()), first
    again = {r["tool"]: r["changes"] for r in records if r["phase"] == "again"}
    assert again == {"nodeprov": 0, "ansible": 0, "pyinfra": 0}
    (nodeprov,) = [r for r in records if r["tool"] == "nodeprov" and r["phase"] == "again"]
    assert sorted(nodeprov["per_host"]) == ["node1", "node2"]
    for connections, round_trips in nodeprov["per_host"].values():
        assert connections == 1 and round_trips <= 3
    assert "| nodeprov |" in done.stdout and "#### Targets" in done.stdout
    in_sync = {r["phase"]: r for r in records if r["phase"] in ("check", "verify")}
    assert in_sync["check"]["changes"] == 0 and in_sync["verify"]["changes"] == 0  # no drift
    assert in_sync["check"]["peak_threads"] and in_sync["check"]["peak_rss_mb"]
    assert "nodeprov on nodes in sync" in done.stdout


@pytest.mark.integration
def test_the_sync_comparison_runs_to_its_table() -> None:
    root = Path(tempfile.mkdtemp(prefix="nodeprov-bench-sync-", dir="/srv"))
    try:
        done = subprocess.run([sys.executable, "-m", "tests.bench.sync", "--nodes", "2",
                               "--reps", "1", "--root", str(root)],
                              cwd=REPO, capture_output=True, text=True, timeout=1500,
                              stdin=subprocess.DEVNULL)
        assert done.returncode == 0, done.stderr[-4000:] + done.stdout[-4000:]
        assert "| 2 | " in done.stdout and "2000 files of 8000 bytes" in done.stdout
        assert not (root / "sync-testbed").exists(), "the testbed was left up"
    finally:
        shutil.rmtree(root, ignore_errors=True)
