"""Performance benchmark: nodeprov against tuned Ansible and pyinfra 3 on the local test cluster.

    sudo .venv/bin/python -m tests.bench.run          # N = 1, 8, 32, 3 repetitions (~40 min)
    sudo .venv/bin/python -m tests.bench.run --nodes 8 --reps 1 --tools nodeprov,pyinfra --no-job
    sudo .venv/bin/python -m tests.bench.run --smoke --json /tmp/bench.json   # 2 nodes, once
    .venv/bin/python -m tests.bench.run --from-json /tmp/bench.json           # tables again

Ansible runs 2 repetitions at 32 nodes and more (--ansible-reps-32): ~7 minutes each there.

For each N and repetition, each tool in turn (nodeprov, Ansible, pyinfra, then again) gets fresh
testbed nodes and runs the same work, written as that tool is usually written
(tests/bench/{nodeprov,ansible,pyinfra}/): the network work on fresh nodes (timed: the first
apply), then the work with a bare venv added, then all of it again, changing nothing (timed, with
CPU: the no-change re-apply). On nodeprov's nodes a bare Fabric script then runs one command
over one connection per host: the floor. Each timed run waits for a quiet machine first.
Afterwards the verification job runs on 2 and 4 nodes beside iperf3. Markdown tables go to
stdout, progress to stderr; every testbed is taken down, also on failure or Ctrl-C.

Ansible (with its bundled collections) and pyinfra are installed from PyPI into venvs under
--root on first use; the nodes are offline and need only their python3.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from nodeprov.testbed.cluster import Testbed
from nodeprov.testbed.environment import problems
from nodeprov.testbed.lifecycle import down, up
from tests.bench import endstate, job, report
from tests.bench.measure import OwnCpu, Sample, processes_pss_mb, timed
from tests.bench.tools import Ansible, Nodeprov, Outcome, Pyinfra, Tool, ensure_venv

FLOOR = Path(__file__).with_name("floor.py")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


@contextmanager
def fresh_testbed(directory: Path, nodes: int, **options: Any,
                  ) -> Iterator[tuple[Testbed, float, float]]:
    """The testbed, the memory each node's processes hold once up (Pss, MB), and the seconds
    its bring-up took."""
    down(directory)  # what an interrupted run of ours may have left
    started = time.perf_counter()
    bed = up(directory, nodes=nodes, **options)
    bringup = time.perf_counter() - started
    inits = [member.init.pid for name in bed.nodes
             if (member := bed.state.member(name)).init is not None]
    try:
        node_mb = processes_pss_mb(inits) / nodes
        log(f"{nodes} nodes up in {bringup:.1f} s, {node_mb:.1f} MB per node (Pss of its "
            f"processes), load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
        yield bed, node_mb, bringup
    finally:
        down(directory)


def record(sample: Sample, tool: Tool, bed: Testbed, work: Path, phase: str, rep: int,
           ) -> dict[str, Any]:
    """One sample as a report record, with what the tool said about its run."""
    if phase == "floor":
        outcome = Outcome(sample.exit_code == 0, None, sample.output[-500:])
    else:
        outcome = tool.outcome(work, phase, sample.output, sample.exit_code, len(bed.nodes))
    log(f"  {len(bed.nodes):>3} nodes rep {rep} {tool.name:<8} {phase:<5} "
        f"{sample.wall_s:7.2f} s  cpu {sample.machine_cpu_s:6.2f} s  changes "
        f"{outcome.changes}  load before {sample.load_before[0]:.1f}"
        f"{'' if outcome.ok else '  FAILED: ' + outcome.problem}")
    (work / f"{phase}.log").write_text(sample.output)
    return {"nodes": len(bed.nodes), "rep": rep, "tool": tool.name, "phase": phase,
            "wall_s": sample.wall_s, "machine_cpu_s": sample.machine_cpu_s,
            "own_cpu_s": sample.own_cpu_s, "background_cores": sample.background_cores,
            "ok": outcome.ok, "changes": outcome.changes, "problem": outcome.problem,
            "per_host": outcome.per_host, "endstate": [], "peak_rss_mb": sample.peak_rss_mb,
            "peak_threads": sample.peak_threads, "peak_tree_rss_mb": sample.peak_tree_rss_mb,
            "load_before": sample.load_before}


def bench_tool(tool: Tool, bed: Testbed, work: Path, rep: int, own: OwnCpu,
               patience: float = 20.0) -> list[dict[str, Any]]:
    """First apply (network), venv added, no-change re-apply; the floor on nodeprov's nodes."""
    tool.prepare(bed, work)
    records = []
    try:
        for phase, network_only in (("first", True), ("venv", False), ("again", False)):
            command = tool.command(bed, work, phase=phase, network_only=network_only)
            # "venv" is not a target: no need to wait for a quiet machine before it
            sample = timed(command.argv, own=own, env=command.env, cwd=command.cwd,
                           quiet_wait=phase != "venv", patience=patience)
            records.append(record(sample, tool, bed, work, phase, rep))
            if phase == "venv":
                records[-1]["endstate"] = [f"{node}: {problem}"
                                           for node in {bed.nodes[0], bed.nodes[-1]}
                                           for problem in endstate.check(bed, node)]
                for problem in records[-1]["endstate"]:
                    log(f"  {tool.name}: end state: {problem}")
        if isinstance(tool, Nodeprov):
            sample = timed([sys.executable, str(FLOOR), str(bed.ssh_config_path), *bed.nodes],
                           own=own, patience=patience)
            records.append(record(sample, tool, bed, work, "floor", rep))
            for phase in ("check", "verify"):  # apply --check and verify --no-job, in sync
                command = tool.command(bed, work, phase=phase, network_only=False)
                sample = timed(command.argv, own=own, env=command.env, cwd=command.cwd,
                               patience=patience)
                records.append(record(sample, tool, bed, work, phase, rep))
    finally:
        tool.cleanup(work)
    return records


def bench_sizes(sizes: list[int], reps: int, tools: list[Tool], own: OwnCpu,
                args: argparse.Namespace) -> list[dict[str, Any]]:
    """Each size, ``reps`` times, with each tool; ``args``: the command line's --root,
    --ansible-reps-32, --ansible-max-nodes and --quiet-wait."""
    root, ansible_max_nodes, patience = args.root, args.ansible_max_nodes, args.quiet_wait
    ansible_reps_32 = args.ansible_reps_32
    records: list[dict[str, Any]] = []
    for nodes in sizes:
        if nodes > ansible_max_nodes and any(isinstance(tool, Ansible) for tool in tools):
            print(f"ansible: skipped at {nodes} nodes (--ansible-max-nodes {ansible_max_nodes}:"
                  " ~7 minutes per run at 32 nodes already)\n", flush=True)
        for rep in range(1, reps + 1):
            for tool in tools:
                if isinstance(tool, Ansible) and (
                        nodes > ansible_max_nodes or nodes >= 32 and rep > ansible_reps_32):
                    continue
                work = root / "work" / f"n{nodes}-r{rep}-{tool.name}"
                shutil.rmtree(work, ignore_errors=True)
                with fresh_testbed(root / "testbed", nodes) as (bed, node_mb, bringup):
                    records += [{**r, "node_mem_mb": node_mb, "bringup_s": bringup}
                                for r in bench_tool(tool, bed, work, rep, own, patience)]
        print(report.speed_table(records, nodes) + "\n", flush=True)
        print(report.cpu_table(records, nodes) + "\n", flush=True)
        print(report.scale_table(records, nodes) + "\n", flush=True)
    return records


def bench_job(root: Path) -> dict[str, Any]:
    """Torch on 4 nodes (once), the job on 2 and 4 of them, iperf3 between the same nodes."""
    log("verification job: provisioning 4 nodes with torch (nodeprov site.yaml)")
    down(root / "job")
    bed, seconds = job.provision(root / "job", nodes=4)
    try:
        runs = []
        for count in (2, 4):
            result = job.verification(bed, count)
            nodes = bed.nodes[:count]
            result["iperf3_gbps"] = job.iperf3_flows(bed, [(nodes[0], nodes[1])])[0]
            result["iperf3_what"] = f"1 flow {nodes[0]}->{nodes[1]}"
            ring = job.iperf3_flows(bed, job.ring(nodes))
            result["iperf3_ring_gbps"] = sum(ring) / len(ring)  # per flow, all at once
            log(f"  job on {count} nodes: {result['verdict']} ({result['duration_s']:.1f} s); "
                f"iperf3 {result['iperf3_gbps']:.2f} GB/s, ring of {count} flows "
                f"{result['iperf3_ring_gbps']:.2f} GB/s each")
            runs.append(result)
    finally:
        down(root / "job")
        # what remains is ours: the bandwidth baseline `nodeprov apply` wrote by the inventory
        shutil.rmtree(root / "job", ignore_errors=True)
    return {"provision_s": seconds, "runs": runs}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", default="1,8,32", help="comma-separated node counts")
    parser.add_argument("--reps", type=int, default=3, help="repetitions per tool and size")
    parser.add_argument("--ansible-reps-32", type=int, default=2,
                        help="Ansible's repetitions at 32 nodes and more (it takes minutes)")
    parser.add_argument("--ansible-max-nodes", type=int, default=32,
                        help="skip Ansible above this many nodes (it takes minutes per run)")
    parser.add_argument("--tools", default="nodeprov,ansible,pyinfra")
    parser.add_argument("--quiet-wait", type=float, default=20.0, metavar="SECONDS",
                        help="how long each timed run waits for a quiet machine at most")
    parser.add_argument("--smoke", action="store_true", help="2 nodes, 1 repetition, no job")
    parser.add_argument("--no-job", action="store_true", help="skip the verification job")
    parser.add_argument("--forks", type=int, metavar="N",
                        help="hosts every tool handles at once (default: all nodes; pyinfra "
                             "fails at 128 at once, see RESULTS.md)")
    parser.add_argument("--root", type=Path, default=Path("/srv/nodeprov-bench"),
                        help="where the testbeds and work files go")
    parser.add_argument("--venvs", type=Path, help="the tools' venvs (default: ROOT/venvs)")
    parser.add_argument("--json", type=Path, help="also write every sample here")
    parser.add_argument("--from-json", type=Path, metavar="PATH",
                        help="run nothing: print the tables of an earlier run's --json file")
    args = parser.parse_args(argv)
    if args.from_json:
        print_tables(json.loads(args.from_json.read_text()))
        return 0
    found = problems()
    if found:
        print(f"bench: needs a local testbed: {'; '.join(found)}", file=sys.stderr)
        return 2
    sizes = [2] if args.smoke else [int(n) for n in args.nodes.split(",")]
    reps = 1 if args.smoke else args.reps
    signal.signal(signal.SIGTERM, _exit_on_sigterm)  # so every testbed still comes down
    versions = {"machine": f"{os.cpu_count()} cores, {cpu_model()}",
                "python": platform.python_version(), "nodeprov": nodeprov_version()}
    available: dict[str, Tool] = {"nodeprov": Nodeprov(args.forks)}
    for name, cls in (("ansible", Ansible), ("pyinfra", Pyinfra)):
        venv = (args.venvs or args.root / "venvs") / name
        versions[name] = ensure_venv(venv, name)
        available[name] = cls(venv, args.forks)
    tools = [available[name] for name in args.tools.split(",")]
    print(f"machine: {versions['machine']}; nodeprov {versions['nodeprov']}; "
          f"{versions['ansible']}; {versions['pyinfra']}\n")
    started = time.perf_counter()
    with OwnCpu() as own:
        records = bench_sizes(sizes, reps, tools, own, args)
        job_data = None if args.smoke or args.no_job else bench_job(args.root)
    if job_data:
        print(report.job_table(job_data) + "\n")
    print(report.target_table(records, job_data))
    print(f"\nbenchmark time: {time.perf_counter() - started:.0f} s")
    if args.json:
        args.json.write_text(json.dumps({"versions": versions, "records": records,
                                         "job": job_data}, indent=1))
    return 0 if all(r["ok"] and not r["endstate"] for r in records) else 1


def print_tables(data: dict[str, Any]) -> None:
    """Every table of a finished run, from its --json data."""
    versions, records = data["versions"], data["records"]
    print(f"machine: {versions['machine']}; nodeprov {versions['nodeprov']}; "
          f"{versions['ansible']}; {versions['pyinfra']}\n")
    for nodes in sorted({r["nodes"] for r in records}):
        print(report.speed_table(records, nodes) + "\n")
        print(report.cpu_table(records, nodes) + "\n")
        print(report.scale_table(records, nodes) + "\n")
    if data["job"]:
        print(report.job_table(data["job"]) + "\n")
    print(report.target_table(records, data["job"]))


def cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.partition(":")[2].strip()
    return platform.machine()


def nodeprov_version() -> str:
    """The commit the benchmark measured, "+changes" when nodeprov/ differs from it."""
    repo = Path(__file__).resolve().parents[2]
    git = ["git", "-C", str(repo)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    dirty = subprocess.run([*git, "status", "--porcelain", "--", "nodeprov"],
                           capture_output=True, text=True).stdout.strip()
    return (head or "unknown") + ("+changes" if dirty else "")


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    sys.exit(main())
