"""No host lost to load: nodeprov's whole default playbook (network, venv, torch from the
wheelhouse) applied to fresh nodes, with every host's outcome, on a machine the run saturates.

    sudo .venv/bin/python -m tests.bench.firstapply --nodes 32

The nodes are offline: this machine fills the wheelhouse from its local mirrors
(``job.MIRROR_VARS``) once and pushes the wheels to each node (``wheelhouse: true``). Each node
then holds torch installed (~0.9 GB on this machine's disk, in the node's overlay). A host that
fails is named with its item and cause; a traceback anywhere in the output is a failure too.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

from tests.bench import job
from tests.bench.measure import OwnCpu, timed
from tests.bench.run import fresh_testbed, log
from tests.bench.tools import Nodeprov

PHASE = "torch"


def torch_first_apply(root: Path, nodes: int, own: OwnCpu | None) -> dict[str, Any]:
    """One timed ``nodeprov apply`` of site.yaml with the wheelhouse on ``nodes`` fresh nodes."""
    work = root / "work" / f"torch-n{nodes}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    extra = {**job.MIRROR_VARS, "wheelhouse": True}
    with fresh_testbed(root / "testbed", nodes, extra_vars=extra) as (bed, node_mb, bringup):
        argv = [str(Path(sys.executable).with_name("nodeprov")), "apply",
                str(bed.inventory_path), "--forks", str(nodes), "--json",
                str(work / f"{PHASE}.json")]
        sample = timed(argv, own=own, quiet_wait=False)
        (work / f"{PHASE}.log").write_text(sample.output)
        outcome = Nodeprov().outcome(work, PHASE, sample.output, sample.exit_code, nodes)
        report = work / f"{PHASE}.json"
        hosts = json.loads(report.read_text())["hosts"] if report.exists() else {}
    completed = sum(host["status"] in ("ok", "changed") for host in hosts.values())
    log(f"  {nodes} nodes: site.yaml with the wheelhouse {sample.wall_s:.1f} s, {completed} of "
        f"{nodes} hosts completed{'' if outcome.ok else ': ' + outcome.problem}")
    return {"nodes": nodes, "wall_s": sample.wall_s, "own_cpu_s": sample.own_cpu_s,
            "completed": completed, "ok": outcome.ok, "problem": outcome.problem,
            "load_before": sample.load_before, "peak_rss_mb": sample.peak_rss_mb,
            "peak_tree_rss_mb": sample.peak_tree_rss_mb, "peak_threads": sample.peak_threads,
            "node_mem_mb": node_mb, "bringup_s": bringup}


def table(runs: list[dict[str, Any]]) -> str:
    """One row per run: did every host complete, how long, what failed (node, item, cause)."""
    lines = ["#### First apply of site.yaml (network + venv + torch from the wheelhouse), "
             "fresh nodes", "",
             "| nodes | hosts completed | wall s | own CPU s | peak RSS (MB) | peak threads | "
             "load avg before (1/5/15 min) | failures (node: item: cause) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for run in runs:
        cpu = f"{run['own_cpu_s']:.0f}" if run["own_cpu_s"] is not None else "n/a"
        load = " / ".join(f"{value:.1f}" for value in run["load_before"])
        lines.append(f"| {run['nodes']} | {run['completed']} of {run['nodes']} | "
                     f"{run['wall_s']:.1f} | {cpu} | {run['peak_rss_mb'] or 0:.0f} | "
                     f"{run['peak_threads'] or '-'} | {load} | "
                     f"{(run['problem'] or 'none').replace('|', '/')} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", default="8", help="comma-separated node counts")
    parser.add_argument("--root", type=Path, default=Path("/srv/nodeprov-bench-torch"))
    args = parser.parse_args(argv)
    log(f"load average {os.getloadavg()}")
    with OwnCpu() as own:
        runs = [torch_first_apply(args.root, int(n), own) for n in args.nodes.split(",")]
    print(table(runs))
    return 0 if all(run["ok"] for run in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
