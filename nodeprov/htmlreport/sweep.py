"""The all-reduce sweep as a chart: busbw and algbw against the message size (log2), the
baseline run's busbw beside them, so a drop shows, and the slowest node's link speed where every
node reports one, so the distance to it shows (``sweep.svg`` draws it)::

    plot = sweep_plot(report["proofs"][0])     # None: the job produced no sweep
    [point.label for point in plot.series[0].points][-1]
    # '64 MiB: busbw 120 MB/s'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodeprov.htmlreport.scale import Scale, Tick, round_ticks
from nodeprov.util.units import human_bytes

WIDTH, HEIGHT = 760, 380
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 20, 50  # margins around the plotting area, in pixels
TICK_ROOM = 44  # pixels between the size labels
UNITS = ((1e9, "GB/s"), (1e6, "MB/s"), (1e3, "kB/s"), (1.0, "B/s"))


@dataclass(frozen=True)
class Point:
    x: float
    y: float
    bytes: int
    bytes_per_s: float
    label: str


@dataclass(frozen=True)
class Series:
    key: str  # busbw, algbw, baseline: the CSS class and the DOM's data-series
    name: str
    points: tuple[Point, ...]

    @property
    def path(self) -> str:
        return " ".join(f"{'L' if i else 'M'}{p.x},{p.y}" for i, p in enumerate(self.points))


@dataclass(frozen=True)
class LinkLine:
    y: float
    bytes_per_s: float
    label: str


@dataclass(frozen=True)
class SweepPlot:
    series: tuple[Series, ...]
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    unit: str
    link: LinkLine | None = None
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    right: int = WIDTH - RIGHT
    top: int = TOP
    bottom: int = HEIGHT - BOTTOM


def unit_for(bytes_per_s: float) -> tuple[float, str]:
    """The largest unit in which ``bytes_per_s`` is at least 1."""
    return next((unit for unit in UNITS if bytes_per_s >= unit[0]), UNITS[-1])


def speed(bytes_per_s: float, unit: tuple[float, str]) -> str:
    """
    >>> speed(1.2e8, (1e6, "MB/s")), speed(2.5e10, (1e9, "GB/s"))
    ('120 MB/s', '25 GB/s')
    """
    return f"{bytes_per_s / unit[0]:.3g} {unit[1]}"


def _spaced(ticks: Sequence[Tick]) -> tuple[Tick, ...]:
    """The ticks at least ``TICK_ROOM`` pixels apart (labels would overlap), the first and the
    last always among them."""
    kept = [ticks[0]]
    for tick in ticks[1:-1]:
        if tick.at - kept[-1].at >= TICK_ROOM and ticks[-1].at - tick.at >= TICK_ROOM:
            kept.append(tick)
    return tuple(kept + list(ticks[1:][-1:]))


def _baseline_name(proof: Mapping[str, Any]) -> str:
    """The stored baseline's legend: this run when apply just recorded it, else when and
    where the run it keeps ran (reports before the baseline said where: when only).

    >>> _baseline_name({"baseline": {"recorded": "2026-11-28T23:00:00+00:00",
    ...                              "nodes": ["node1", "node2"]}})
    'baseline busbw (2026-11-28T23:00:00+00:00, node1, node2)'
    """
    stored = proof["baseline"]
    if proof.get("baseline_note"):
        return "baseline busbw: this run, recorded as the baseline"
    return f"baseline busbw ({', '.join([stored['recorded'], *stored.get('nodes', [])])})"


def sweep_plot(proof: Mapping[str, Any]) -> SweepPlot | None:
    """The chart of ``proof``'s sweep (a proof of the JSON report), None without one."""
    result = (proof.get("job") or {}).get("result") or {}
    rows = [row for row in result.get("sizes", []) if row["bytes"] > 0]
    if not rows:
        return None
    baseline = [row for row in (proof.get("baseline") or {}).get("sizes", []) if row["bytes"] > 0]
    link = proof.get("link")  # absent in reports written before it was added
    curves = [r[k] for r in rows for k in ("busbw_bytes_per_s", "algbw_bytes_per_s")]
    highest = max(curves + [row["busbw_bytes_per_s"] for row in baseline]
                  + ([link["bytes_per_s"]] if link else []))
    unit = unit_for(highest)
    ticks = round_ticks(highest / unit[0])
    sizes = sorted({row["bytes"] for row in rows + baseline})
    x = Scale(sizes[0], sizes[-1], LEFT, WIDTH - RIGHT, log=True)
    y = Scale(0, ticks[-1] * unit[0], HEIGHT - BOTTOM, TOP)

    def series(key: str, name: str, field: str, measured: Sequence[Mapping[str, Any]]) -> Series:
        return Series(key, name, tuple(
            Point(x(row["bytes"]), y(row[field]), row["bytes"], row[field],
                  f"{human_bytes(row['bytes'])}: {name} {speed(row[field], unit)}")
            for row in measured))

    drawn = [series("busbw", "busbw", "busbw_bytes_per_s", rows),
             series("algbw", "algbw", "algbw_bytes_per_s", rows)]
    if baseline:  # drawn first, under this run's curves
        drawn.insert(0, series("baseline", _baseline_name(proof), "busbw_bytes_per_s", baseline))
    return SweepPlot(
        tuple(drawn),
        _spaced([Tick(x(size), human_bytes(size)) for size in sizes]),
        tuple(Tick(y(tick * unit[0]), f"{tick:g}") for tick in ticks),
        unit[1],
        LinkLine(y(link["bytes_per_s"]), link["bytes_per_s"],
                 f"link {speed(link['bytes_per_s'], unit)} ({link['node']} {link['interface']}, "
                 "the slowest)") if link else None)
