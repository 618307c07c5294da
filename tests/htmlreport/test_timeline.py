"""Each node's tasks on one time axis."""

from __future__ import annotations

from nodeprov.htmlreport.timeline import timeline
from tests.htmlreport.reports import big_apply, recorded


def test_tasks_without_start_times_go_end_to_end() -> None:
    hosts = recorded("apply-3")["hosts"]
    line = timeline(hosts)
    first = line.rows[0]
    assert [bar.task for bar in first.bars] == [t["name"] for t in hosts["node1"]["tasks"]]
    assert first.bars[1].x >= first.bars[0].x + first.bars[0].width - 0.2
    assert first.bars[1].title.startswith(
        "node1: torch matched to the CUDA driver, the same on every node: changed, 165.7 s "
        "from 3.6 s\ninstall torch==2.13.0+cpu")


def test_start_times_place_the_bars() -> None:
    hosts = recorded("apply-3")["hosts"]
    for task in hosts["node2"]["tasks"]:
        task["start_s"] = 100.0
    line = timeline(hosts)
    assert {bar.x for bar in line.rows[1].bars} == {line.rows[1].bars[0].x}
    assert line.rows[1].bars[0].x > line.rows[0].bars[1].x


def test_a_failed_task_stays_visible_among_128_nodes() -> None:
    line = timeline(big_apply(128)["hosts"])
    failed = [bar for row in line.rows for bar in row.bars if bar.status == "failed"]
    assert len(failed) == 1 and failed[0].width >= 5
    assert [row.status for row in line.rows].count("failed") == 1
    assert line.row_height == 10


def test_a_recorded_apply_with_start_times_starts_after_connecting() -> None:
    hosts = recorded("apply-3-again")["hosts"]
    line = timeline(hosts)
    for row in line.rows:
        tasks = hosts[row.node]["tasks"]
        starts = [task["start_s"] for task in tasks]
        assert starts == sorted(starts) and starts[0] > 0  # facts were read first
        assert row.bars[0].x > line.left
        assert f"from {starts[0]:.1f} s" in row.bars[0].title
