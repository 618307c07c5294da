"""The recap and the JSON report, from hand-made results (no nodes)."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

from rich.console import Console

from nodeprov.commands.apply import apply_report
from nodeprov.commands.console import LiveReporter, print_recap
from nodeprov.engine.outcome import HostResult, TaskResult
from nodeprov.remote.facts import parse_facts, split_sections
from nodeprov.util.progress import Transfers
from tests.report_schema import assert_valid

FACTS_OUTPUT = Path(__file__).parents[1] / "data" / "facts" / "debian12-vm.txt"


def results() -> list[HostResult]:
    facts = parse_facts(split_sections(FACTS_OUTPUT.read_text(), "TOKEN123"))
    return [
        HostResult("node1", "changed", [
            TaskResult("Firewall", "firewall", "ok", notes=["ufw rule already present"],
                       duration=0.25),
            TaskResult("Hosts", "hosts", "changed", changes=["update hosts block"],
                       diffs=["--- a\n+++ b\n"], duration=0.5)],
            duration=1.25, connections=1, round_trips=2, facts=facts),
        HostResult("node2", "unreachable", error="node2: cannot connect to 10.0.0.12:22"),
    ]


def test_json_report_has_every_result_field_and_the_facts_summary() -> None:
    document = apply_report(results(), check=False, proofs=[], ok=False, batches=[],
                            stopped=None)
    assert_valid(document)
    assert document["ok"] is False and document["check"] is False and document["proofs"] == []
    assert (document["schema_version"], document["command"]) == (1, "apply")
    for result in results():
        expected = dataclasses.asdict(result)
        del expected["name"]
        expected["facts"] = result.facts.summary() if result.facts else None
        assert document["hosts"][result.name] == expected


def recap(terminal: bool) -> str:
    out = io.StringIO()
    console = Console(file=out, force_terminal=terminal, width=120, color_system=None)
    print_recap(console, results(), check=False, rerun=["inventory.yaml"])
    return out.getvalue()


def test_plain_recap_has_one_line_per_host() -> None:
    assert recap(terminal=False).splitlines() == [
        "recap",
        "node1 | changed | ok=1 changed=1 failed=0 skipped=0 | 1.2s",
        "node2 | unreachable | ok=0 changed=0 failed=0 skipped=0 | 0.0s",
        "FAILED node2: cannot connect to 10.0.0.12:22",
        "fix the cause, then re-run only those: nodeprov apply inventory.yaml --limit node2",
        "2 hosts, 1 tasks changed, 1 hosts failed",
    ]


def test_terminal_recap_is_a_table_with_the_same_numbers() -> None:
    lines = recap(terminal=True).splitlines()
    assert lines[0].strip() == "recap"
    rows = [line.split() for line in lines if line.startswith("│ node")]
    assert [[cell for cell in row if cell != "│"] for row in rows] == [
        ["node1", "changed", "1", "1", "0", "0", "1.2s"],
        ["node2", "unreachable", "0", "0", "0", "0", "0.0s"]]
    assert lines[-1] == "2 hosts, 1 tasks changed, 1 hosts failed"


def test_the_live_table_shows_the_transfers_bars_between_two_tasks() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, width=120)
    transfers = Transfers(console, live=True)
    reporter = LiveReporter(console, ["node1", "node2"], transfers=transfers)
    transfers.start("node2", "torch: wheels", 2_000_000)(500_000, 2_000_000)
    text = io.StringIO()
    Console(file=text, width=120).print(reporter._view())
    shown = text.getvalue()
    assert "node1" in shown and "node2: torch: wheels" in shown and "all nodes" in shown
    assert "0.5/2.0 MB" in shown
