"""Each node's tasks on one time axis (``timeline.svg`` draws it): a bar per task from its
start for its duration, coloured by its status, its words on hover::

    line = timeline(report["hosts"])
    line.rows[0].bars[1].title     # 'node1: torch ...: changed, 165.7 s from 3.6 s\\ninstall ...'

A report without start times (``start_s``, written since schema_version 1 gained it) puts each
node's tasks end to end from 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from nodeprov.htmlreport.grid import CHAR_WIDTH
from nodeprov.htmlreport.scale import Scale, Tick, round_ticks

WIDTH = 760
MIN_WIDTH = (2.0, 5.0)  # pixels of a short task's bar; a failed one's wider, to be seen
TITLE_CHARS = 400  # a task's words on hover, at most: a change list can be long


@dataclass(frozen=True)
class Bar:
    x: float
    width: float
    status: str
    task: str
    title: str


@dataclass(frozen=True)
class Row:
    node: str
    status: str
    y: float
    bars: tuple[Bar, ...]
    title: str


@dataclass(frozen=True)
class Timeline:
    rows: tuple[Row, ...]
    ticks: tuple[Tick, ...]
    row_height: int
    left: float
    width: int
    height: float
    font_size: float


def _words(host: str, task: Mapping[str, Any], start: float) -> str:
    lines = [task["error"]] if task["error"] else task["changes"] or task["notes"]
    text = "\n".join([f"{host}: {task['name']}: {task['status']}, {task['duration']:.1f} s "
                      f"from {start:.1f} s", *lines])
    return text if len(text) <= TITLE_CHARS else text[:TITLE_CHARS - 1] + "…"


def timeline(hosts: Mapping[str, Mapping[str, Any]]) -> Timeline:
    """The timeline of an ``apply`` report's ``hosts``."""
    starts: dict[str, list[float]] = {}
    end = 0.0
    for name, host in hosts.items():
        clock, starts[name] = 0.0, []
        for task in host.get("tasks", []):
            start = task.get("start_s")
            start = clock if start is None else start
            starts[name].append(start)
            clock = start + task["duration"]
        end = max(end, clock, host.get("duration", 0.0))
    ticks = round_ticks(end)
    row = max(10, min(22, 1000 // max(len(hosts), 1)))
    font = min(12.0, row * 0.8)
    left = round(max((len(n) for n in hosts), default=1) * font * CHAR_WIDTH + 12, 1)
    x = Scale(0, ticks[-1], left, WIDTH - 20)
    rows = []
    for index, (name, host) in enumerate(hosts.items()):
        bars = tuple(
            Bar(x(start), max(MIN_WIDTH[task["status"] == "failed"],
                              round(x(start + task["duration"]) - x(start), 1)),
                task["status"], task["name"], _words(name, task, start))
            for task, start in zip(host.get("tasks", []), starts[name], strict=True))
        rows.append(Row(name, host["status"], 24 + index * row, bars,
                        f"{name}: {host['status']}" + (f": {host['error']}"
                                                       if host["error"] else "")))
    return Timeline(tuple(rows), tuple(Tick(x(t), f"{t:g} s") for t in ticks), row, left,
                    WIDTH, 24 + len(rows) * row + 30, font)
