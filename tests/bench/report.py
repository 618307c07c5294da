"""The benchmark's tables (Markdown) and its targets, from the recorded samples.

    print(speed_table(records, nodes=8))
    print(target_table(records, job))

A record is one timed run: ``{"nodes", "rep", "tool", "phase", "wall_s", "machine_cpu_s",
"own_cpu_s", "background_cores", "ok", "changes", "per_host"}``; phases: ``first`` (network
work on fresh nodes), ``venv`` (the venv added), ``again`` (no-change re-apply of network + venv)
and ``floor`` (one command over one connection per host).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from tests.bench.measure import median, spread

TOOLS = ("nodeprov", "ansible", "pyinfra")
Record = dict[str, Any]


def pick(records: Sequence[Record], nodes: int, tool: str, phase: str) -> list[Record]:
    return sorted((r for r in records if r["nodes"] == nodes and r["tool"] == tool
                   and r["phase"] == phase), key=lambda r: r["rep"])


def values(records: Sequence[Record], nodes: int, tool: str, phase: str,
           key: str = "wall_s") -> list[float]:
    return [r[key] for r in pick(records, nodes, tool, phase) if r[key] is not None]


def pair_ratios(records: Sequence[Record], nodes: int, tool: str, phase: str,
                key: str = "wall_s", base: str = "nodeprov",
                base_phase: str | None = None) -> list[float]:
    """``tool / base`` for each repetition both ran (the runs of one repetition are adjacent)."""
    by_rep = {r["rep"]: r[key] for r in pick(records, nodes, base, base_phase or phase)}
    return [r[key] / by_rep[r["rep"]] for r in pick(records, nodes, tool, phase)
            if by_rep.get(r["rep"]) and r[key] is not None]


def _ratio_cell(ratios: list[float]) -> str:
    """``2.1x (1.9-2.4)``: the median of the per-repetition ratios and their range."""
    if not ratios:
        return "-"
    middle, _, rest = spread(ratios, 1).partition(" ")
    return f"{middle}x {rest}".strip()


def speed_table(records: Sequence[Record], nodes: int) -> str:
    """Wall times: first apply of the network work, no-change re-apply, the floor."""
    lines = [f"#### {nodes} node{'s' if nodes != 1 else ''}: wall time, s, median (min-max)",
             "",
             "| tool | first apply (network) | x nodeprov | no-change re-apply (network + venv) "
             "| x nodeprov | venv added (s) | 2nd-run changes |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for tool in TOOLS:
        first, again = values(records, nodes, tool, "first"), values(records, nodes, tool, "again")
        if not first and not again:
            continue
        changes = ", ".join("?" if r["changes"] is None else str(r["changes"])
                            for r in pick(records, nodes, tool, "again"))
        venv = values(records, nodes, tool, "venv")
        lines.append(
            f"| {tool} | {spread(first) if first else '-'} | "
            f"{_ratio_cell(pair_ratios(records, nodes, tool, 'first'))} | "
            f"{spread(again) if again else '-'} | "
            f"{_ratio_cell(pair_ratios(records, nodes, tool, 'again'))} | "
            f"{spread(venv) if venv else '-'} | {changes} |")
    floor = values(records, nodes, "nodeprov", "floor")
    if floor:
        ratio = pair_ratios(records, nodes, "nodeprov", "again", base="nodeprov",
                            base_phase="floor")
        lines.append(f"| floor (Fabric, 1 command) | - | - | {spread(floor)} | "
                     f"nodeprov = {_ratio_cell(ratio)} floor | - | - |")
    return "\n".join(lines)


def cpu_table(records: Sequence[Record], nodes: int) -> str:
    """CPU seconds of the no-change run: the whole machine, and this benchmark's own."""
    lines = [f"#### {nodes} node{'s' if nodes != 1 else ''}: CPU seconds of a no-change run "
             "(2 cores), median (min-max)", "",
             "| tool | machine (/proc/stat) | x nodeprov | own (cgroup: tool + ssh + nodes) "
             "| x nodeprov | other load before (cores) |",
             "| --- | --- | --- | --- | --- | --- |"]
    for tool in (*TOOLS, "floor"):
        source, phase = ("nodeprov", "floor") if tool == "floor" else (tool, "again")
        machine = values(records, nodes, source, phase, "machine_cpu_s")
        if not machine:
            continue
        own = values(records, nodes, source, phase, "own_cpu_s")
        base = {"base": "nodeprov", "base_phase": "again"}
        lines.append(
            f"| {tool} | {spread(machine)} | "
            f"{_ratio_cell(pair_ratios(records, nodes, source, phase, 'machine_cpu_s', **base))}"
            f" | {spread(own) if own else 'n/a'} | "
            f"{_ratio_cell(pair_ratios(records, nodes, source, phase, 'own_cpu_s', **base))} | "
            f"{spread(values(records, nodes, source, phase, 'background_cores'))} |")
    return "\n".join(lines)


def scale_table(records: Sequence[Record], nodes: int) -> str:
    """nodeprov in sync: re-apply, apply --check, verify --no-job; its peak RSS and threads; the
    memory each testbed node took."""
    lines = [f"#### {nodes} node{'s' if nodes != 1 else ''}: nodeprov on nodes in sync, median",
             "", "| run | wall s | connections / round trips per host | peak RSS (MB) | "
             "peak threads | "
             "load avg before (1 min) |", "| --- | --- | --- | --- | --- | --- |"]
    for phase, name in (("again", "apply (no-change)"), ("check", "apply --check"),
                        ("verify", "verify --no-job"), ("floor", "floor (Fabric)"),
                        ("first", "first apply (network)"), ("venv", "venv added")):
        wall = values(records, nodes, "nodeprov", phase)
        if not wall:
            continue
        per_host = [pair for r in pick(records, nodes, "nodeprov", phase)
                    for pair in (r.get("per_host") or {}).values()]
        trips = (f"{_range(sorted({c for c, _ in per_host}))} / "
                 f"{_range(sorted({t for _, t in per_host}))}" if per_host else "")
        rss = values(records, nodes, "nodeprov", phase, "peak_rss_mb")
        threads = values(records, nodes, "nodeprov", phase, "peak_threads")
        load = [r["load_before"][0] for r in pick(records, nodes, "nodeprov", phase)
                if r.get("load_before")]
        lines.append(f"| {name} | {spread(wall)} | {trips or 'not reported'} | "
                     f"{f'{median(rss):.0f}' if rss else '-'} | "
                     f"{f'{median(threads):.0f}' if threads else '-'} | "
                     f"{spread(load, 1) if load else '-'} |")
    lines.append("\npeak RSS: the CLI process's VmHWM; peak threads: its process tree's at once "
                 "(/proc: the CLI every 0.05 s, what it starts every second); verify's round "
                 "trips: every Session's counter, tallied in the CLI's process")
    memory = [r["node_mem_mb"] for r in records if r["nodes"] == nodes and r.get("node_mem_mb")]
    if memory:
        lines.append(f"memory per testbed node, its processes once up (Pss of the node's init "
                     f"and descendants, sshd included, /proc/PID/smaps_rollup): "
                     f"{median(memory):.1f} MB")
    bringup = [r["bringup_s"] for r in records if r["nodes"] == nodes and r.get("bringup_s")]
    if bringup:
        lines.append(f"testbed bring-up (up() until every node takes an SSH login): "
                     f"{spread(sorted(set(bringup)), 1)} s")
    return "\n".join(lines)


def _range(numbers: list[int]) -> str:
    """``[1]``, or ``[2-3]`` for several values: 128 hosts' counts stay one short cell."""
    if len(numbers) <= 2:
        return str(numbers) if numbers else ""
    return f"[{numbers[0]}-{numbers[-1]}]"


def round_trips(records: Sequence[Record], nodes: int) -> tuple[set[int], set[int]]:
    """Connections and round trips per host seen in nodeprov's no-change runs."""
    seen = [counts for r in pick(records, nodes, "nodeprov", "again")
            for counts in r["per_host"].values()]
    return {c for c, _ in seen}, {t for _, t in seen}


def job_table(job: dict[str, Any]) -> str:
    """busbw per size on 2 and 4 nodes beside iperf3."""
    runs = [{**run, "busbw": {int(size): gbps for size, gbps in run["busbw"].items()}}
            for run in job["runs"]]
    sizes = sorted({int(size) for run in runs for size in run["busbw"]})
    header = " | ".join(f"busbw {run['nodes']} nodes (GB/s)" for run in runs)
    lines = ["#### Verification job (gloo, CPU nodes): all-reduce bus bandwidth per size", "",
             f"| size | {header} |", "| --- |" + " --- |" * len(runs)]
    for size in sizes:
        cells = " | ".join(f"{run['busbw'].get(size, 0.0):.3f}" for run in runs)
        lines.append(f"| {_bytes(size)} | {cells} |")
    lines += ["", "| nodes | iperf3, 1 flow (GB/s) | iperf3, ring of flows at once (GB/s per "
              "flow) | busbw at largest size (GB/s) | busbw / iperf3 1 flow | busbw / iperf3 "
              "ring | launch to verdict (run_job, s) | of which the job's own (s) | verdict |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for run in runs:
        largest = run["busbw"].get(max(sizes), 0.0) if sizes else 0.0
        single, ring = run["iperf3_gbps"], run["iperf3_ring_gbps"]
        own = f"{run['job_s']:.1f}" if run.get("job_s") is not None else "-"
        lines.append(f"| {run['nodes']} | {single:.2f} | {ring:.2f} | {largest:.3f} | "
                     f"{largest / single:.0%} | {largest / ring:.0%} | "
                     f"{run['duration_s']:.1f} | {own} | {run['verdict'].split(':')[0]} |")
    return "\n".join(lines)


def _bytes(size: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if size < 1024:
            return f"{size} {unit}"
        size //= 1024
    return f"{size} GiB"


def target_table(records: Sequence[Record], job: dict[str, Any] | None) -> str:
    """Each target of the issue, the measured value, and whether it holds."""
    rows: list[tuple[str, str, bool | None]] = []
    sizes = sorted({r["nodes"] for r in records})

    def ratio_target(what: str, tool: str, phase: str, check: Callable[[float], bool],
                     nodes: int, key: str = "wall_s") -> None:
        ratios = pair_ratios(records, nodes, tool, phase, key)
        if ratios:
            rows.append((f"{what}, {nodes} nodes", _ratio_cell(ratios) + " (per-run ratios)",
                         check(median(ratios))))

    for nodes in [n for n in sizes if n >= 8] or sizes:
        ratio_target("no-change: pyinfra / nodeprov >= 2", "pyinfra", "again",
                     lambda r: r >= 2, nodes)
        ratio_target("no-change: Ansible / nodeprov >= 10", "ansible", "again",
                     lambda r: r >= 10, nodes)
        floor = pair_ratios(records, nodes, "nodeprov", "again", base="nodeprov",
                            base_phase="floor")
        if floor:
            rows.append((f"no-change: nodeprov / floor <= 2, {nodes} nodes",
                         _ratio_cell(floor), median(floor) <= 2))
    for nodes in sizes:
        connections, trips = round_trips(records, nodes)
        if connections:
            rows.append((f"no-change: 1 connection and <= 3 round trips per host, {nodes} nodes",
                         f"connections {sorted(connections)}, round trips {sorted(trips)}",
                         connections == {1} and max(trips) <= 3))
    for nodes in sizes:
        ratio_target("first apply: pyinfra / nodeprov >= 1.5", "pyinfra", "first",
                     lambda r: r >= 1.5, nodes)
        ratio_target("first apply: Ansible / nodeprov >= 3", "ansible", "first",
                     lambda r: r >= 3, nodes)
    for nodes in sizes:
        for key, name in (("machine_cpu_s", "machine"), ("own_cpu_s", "own")):
            ratio_target(f"no-change CPU ({name}): pyinfra / nodeprov >= 2", "pyinfra", "again",
                         lambda r: r >= 2, nodes, key)
    for tool in TOOLS:
        counts = [r["changes"] for r in records if r["tool"] == tool and r["phase"] == "again"]
        if counts:
            rows.append((f"{tool}: second run reports zero changes",
                         f"changes {sorted(set(counts), key=str)}",
                         all(count == 0 for count in counts)))
    for run in (job or {}).get("runs", []):
        largest = run["busbw"][max(run["busbw"], key=int)] if run["busbw"] else 0.0
        rows.append((f"job busbw at largest size >= 70% of iperf3, {run['nodes']} nodes",
                     f"{largest:.3f} / {run['iperf3_gbps']:.2f} GB/s = "
                     f"{largest / run['iperf3_gbps']:.0%}", largest >= 0.7 * run["iperf3_gbps"]))
        if run["nodes"] == 4:
            rows.append(("launch to verdict <= 20 s, 4 CPU nodes",
                         f"{run['duration_s']:.1f} s", run["duration_s"] <= 20))
    lines = ["#### Targets", "", "| target | measured | holds |", "| --- | --- | --- |"]
    lines += [f"| {what} | {measured} | {'yes' if ok else 'NO' if ok is False else '-'} |"
              for what, measured, ok in rows]
    return "\n".join(lines)
