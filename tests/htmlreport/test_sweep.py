"""The sweep's chart: this run's busbw and algbw, the baseline under them."""

from __future__ import annotations

import itertools

from nodeprov.htmlreport.sweep import TICK_ROOM, sweep_plot
from tests.htmlreport.reports import recorded


def test_the_points_are_the_sweep_and_the_baseline_is_drawn_first() -> None:
    proof = recorded("verify-3")["proofs"][0]
    plot = sweep_plot(proof)
    assert plot is not None
    assert [series.key for series in plot.series] == ["baseline", "busbw", "algbw"]
    busbw = plot.series[1]
    assert [p.bytes for p in busbw.points] == [r["bytes"] for r in proof["job"]["result"]["sizes"]]
    assert busbw.points[-1].label == "64 MiB: busbw 120 MB/s"
    assert plot.unit == "MB/s"  # 0.12 GB/s at the most
    peak = max(p.bytes_per_s for p in busbw.points) / 1e6
    assert float(plot.y_ticks[-2].label) < peak <= float(plot.y_ticks[-1].label)
    assert plot.y_ticks[0].at == plot.bottom and plot.y_ticks[-1].at == plot.top
    assert busbw.path.startswith(f"M{busbw.points[0].x},{busbw.points[0].y} L")
    gaps = [b.at - a.at for a, b in itertools.pairwise(plot.x_ticks)]
    assert min(gaps) >= TICK_ROOM
    assert (plot.x_ticks[0].label, plot.x_ticks[-1].label) == ("8 B", "64 MiB")


def test_no_job_no_chart() -> None:
    assert sweep_plot(recorded("verify-3-drift")["proofs"][0]) is None


def test_the_slowest_link_is_a_line_the_scale_reaches() -> None:
    # a testbed's veth reports 10000 Mb/s: 1.25 GB/s, ten times the recorded gloo busbw
    proof = {**recorded("verify-3")["proofs"][0],
             "link": {"node": "node2", "interface": "eth0", "bytes_per_s": 1.25e9}}
    plot = sweep_plot(proof)
    assert plot is not None and plot.link is not None
    assert plot.unit == "GB/s" and float(plot.y_ticks[-1].label) >= 1.25
    assert plot.top <= plot.link.y < plot.series[1].points[-1].y  # above the busbw curve
    assert plot.link.label == "link 1.25 GB/s (node2 eth0, the slowest)"
    unreported = sweep_plot(recorded("verify-3")["proofs"][0])
    assert unreported is not None and unreported.link is None  # not reported: no line


def test_the_legend_says_which_baseline_is_drawn() -> None:
    proof = recorded("verify-3")["proofs"][0]
    stored = {**proof["baseline"], "nodes": ["node1", "node2", "node3"]}
    plot = sweep_plot({**proof, "baseline": stored})
    assert plot is not None and plot.series[0].name == (
        f"baseline busbw ({stored['recorded']}, node1, node2, node3)")
    # apply recorded this run as the first baseline: the legend says it is the run itself
    plot = sweep_plot({**proof, "baseline_note": "bandwidth baseline recorded in x (the first)"})
    assert plot is not None
    assert plot.series[0].name == "baseline busbw: this run, recorded as the baseline"
