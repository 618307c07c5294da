"""What ``nodeprov verify --no-job`` costs next to ``nodeprov apply --check``: wall time, and SSH
connections and round trips per host, on fresh testbed nodes the benchmark playbook provisioned.

    sudo .venv/bin/python -m tests.bench.verify --nodes 8 --reps 3
    git archive OLD nodeprov | tar -x -C /tmp/old       # the code before a change, measured
    sudo .venv/bin/python -m tests.bench.verify --nodes 8 --source /tmp/old --source .

Each ``--source`` is a folder holding a nodeprov package to run instead of this checkout's (the
testbed and this script stay this checkout's); with several, each repetition runs every
command of every source in turn on the same nodes, so a busy machine weighs on all alike. Wall
time and CPU (this process tree's: the CLI, its SSH, every node's sshd and commands; machine
CPU where no cgroup could be made) are the CLI's, one process per run, timed once the machine
is quiet; the connections and round trips come from a separate run of the same command in a
process that tallies every Session's counters when it closes. A table goes to stdout, progress
to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from pathlib import Path

from tests.bench.measure import OwnCpu, Sample, spread, timed
from tests.bench.run import fresh_testbed, log
from tests.bench.tools import Nodeprov

REPO = Path(__file__).resolve().parents[2]
COMMANDS = {"verify --no-job": ("verify", "--no-job"), "apply --check": ("apply", "--check")}
ENV = {**os.environ, "PYTHONPATH": str(REPO)}  # tests.bench from here, nodeprov from the source


def argv(command: str, inventory: Path, playbook: Path) -> list[str]:
    verb, option = COMMANDS[command]
    return [verb, str(inventory), "-p", str(playbook), option]


def count(args: list[str]) -> dict[str, tuple[int, int]]:
    """{host: (connections, round trips)} of one run of the CLI with ``args``, in-process."""
    from nodeprov.cli import app
    from nodeprov.remote.session import Session

    seen: dict[int, tuple[str, int, int]] = {}
    close = Session.close

    def tally(session: Session) -> None:
        seen[id(session)] = (session.host.name, session.connections, session.round_trips)
        close(session)

    setattr(Session, "close", tally)  # noqa: B010 (mypy rejects assigning a method)
    try:
        app(args)
    except SystemExit:
        pass
    finally:
        setattr(Session, "close", close)  # noqa: B010
    per_host: dict[str, tuple[int, int]] = defaultdict(lambda: (0, 0))
    for name, connections, round_trips in seen.values():
        before = per_host[name]
        per_host[name] = (before[0] + connections, before[1] + round_trips)
    return dict(per_host)


def measure(command: str, inventory: Path, playbook: Path, source: Path, own: OwnCpu
            ) -> Sample:
    sample = timed([sys.executable, "-m", "nodeprov", *argv(command, inventory, playbook)],
                   own=own, env=ENV, cwd=source)
    log(f"  {source}: {command}: {sample.wall_s:.2f} s, exit {sample.exit_code}, background "
        f"{sample.background_cores:.2f} cores")
    return sample


def counted(command: str, inventory: Path, playbook: Path, source: Path, own: OwnCpu
            ) -> dict[str, list[int]]:
    run = timed([sys.executable, "-m", "tests.bench.verify", "--count", "--",
                 *argv(command, inventory, playbook)], own=own, env=ENV, cwd=source,
                quiet_wait=False)
    return json.loads(run.output.strip().splitlines()[-1])  # type: ignore[no-any-return]


def row(source: Path, command: str, samples: list[Sample], per_host: dict[str, list[int]]
        ) -> str:
    cpu = [s.own_cpu_s if s.own_cpu_s is not None else s.machine_cpu_s for s in samples]
    return (f"| {source} | {command} | {spread([s.wall_s for s in samples])} | "
            f"{spread(cpu)} | {','.join(sorted({str(s.exit_code) for s in samples}))} | "
            f"{'-'.join(sorted({str(pair[0]) for pair in per_host.values()}))} | "
            f"{'-'.join(sorted({str(pair[1]) for pair in per_host.values()}))} | "
            f"{max(s.background_cores for s in samples):.2f} |")


def bench(nodes: int, sources: list[Path], reps: int, root: Path, own: OwnCpu) -> str:
    playbook = Nodeprov.playbook
    with fresh_testbed(root / "testbed", nodes) as (bed, _node_mb, _bringup_s):
        log(f"{nodes} nodes: provisioning with {playbook.name}")
        first = timed([sys.executable, "-m", "nodeprov", "apply", str(bed.inventory_path),
                       "-p", str(playbook), "--forks", str(nodes)], own=own, env=ENV,
                      quiet_wait=False)
        if first.exit_code != 0:
            raise SystemExit(first.output[-2000:])
        samples: dict[tuple[Path, str], list[Sample]] = {
            (source, command): [] for source in sources for command in COMMANDS}
        for _ in range(reps):
            for (source, command), taken in samples.items():
                taken.append(measure(command, bed.inventory_path, playbook, source, own))
        lines = [f"{nodes} nodes, {reps} repetition(s)",
                 "| nodeprov from | command | wall s | CPU s | exit | connections / host | "
                 "round trips / host | background cores (max) |", "|---" * 8 + "|"]
        for (source, command), taken in samples.items():
            lines.append(row(source, command, taken,
                             counted(command, bed.inventory_path, playbook, source, own)))
    return "\n".join(lines)


def main(argv_: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", default="8", help="comma-separated node counts")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--source", type=Path, action="append",
                        help="a folder holding the nodeprov package to measure (repeatable; "
                             "default: this checkout)")
    parser.add_argument("--root", type=Path, default=Path("/srv/nodeprov-bench-verify"))
    parser.add_argument("--count", action="store_true",
                        help="internal: run the CLI with the remaining arguments, print "
                             "{host: [connections, round trips]} as JSON")
    parser.add_argument("--count-file", type=Path,
                        help="internal, with --count: write the JSON here, not to stdout")
    parser.add_argument("rest", nargs="*")
    args = parser.parse_args(argv_)
    if args.count:
        counts = json.dumps(count(args.rest))
        if args.count_file:
            args.count_file.write_text(counts)
        else:
            print(counts)
        return 0
    sources = [source.resolve() for source in args.source or [REPO]]
    with OwnCpu() as own:
        for nodes in (int(n) for n in args.nodes.split(",")):
            print(bench(nodes, sources, args.reps, args.root, own) + "\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
