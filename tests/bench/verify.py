"""What ``nodeprov verify --no-job`` costs next to ``nodeprov apply --check``: wall time, and SSH
connections and round trips per host, on fresh testbed nodes the benchmark playbook provisioned.

    sudo .venv/bin/python -m tests.bench.verify --nodes 8 --reps 3
    git archive OLD nodeprov | tar -x -C /tmp/old       # the code before a change ...
    sudo .venv/bin/python -m tests.bench.verify --nodes 8 --source /tmp/old   # ... measured too

``--source`` runs the nodeprov package found in that folder instead of this checkout's (the
testbed and this script stay this checkout's). Wall time is the CLI's, one process per run,
timed once the machine is quiet; the connections and round trips come from a separate run of
the same command in a process that tallies every Session's counters when it closes. A table
goes to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from tests.bench.measure import OwnCpu, Sample, spread, timed
from tests.bench.run import fresh_testbed, log
from tests.bench.tools import Nodeprov

REPO = Path(__file__).resolve().parents[2]
COMMANDS = {"verify --no-job": ("verify", "--no-job"), "apply --check": ("apply", "--check")}


def argv(command: str, inventory: Path, playbook: Path) -> list[str]:
    verb, option = COMMANDS[command]
    return [verb, str(inventory), "-p", str(playbook), option]


def count(args: list[str]) -> dict[str, tuple[int, int]]:
    """{host: (connections, round trips)} of one run of the CLI with ``args``, in-process."""
    from nodeprov.cli import app
    from nodeprov.session import Session

    seen: dict[int, tuple[str, int, int]] = {}
    close = Session.close

    def tally(session: Session) -> None:
        seen[id(session)] = (session.host.name, session.connections, session.round_trips)
        close(session)

    Session.close = tally  # type: ignore[method-assign]
    try:
        app(args)
    except SystemExit:
        pass
    finally:
        Session.close = close  # type: ignore[method-assign]
    per_host: dict[str, tuple[int, int]] = defaultdict(lambda: (0, 0))
    for name, connections, round_trips in seen.values():
        before = per_host[name]
        per_host[name] = (before[0] + connections, before[1] + round_trips)
    return dict(per_host)


def measure(command: str, inventory: Path, playbook: Path, source: Path, reps: int,
            own: OwnCpu) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}  # tests.bench from here, nodeprov from source
    samples: list[Sample] = []
    for _ in range(reps):
        sample = timed([sys.executable, "-m", "nodeprov", *argv(command, inventory, playbook)],
                       own=own, env=env, cwd=source)
        log(f"  {command}: {sample.wall_s:.2f} s, exit {sample.exit_code}, background "
            f"{sample.background_cores:.2f} cores")
        samples.append(sample)
    counted = timed([sys.executable, "-m", "tests.bench.verify", "--count", "--",
                     *argv(command, inventory, playbook)],
                    own=own, env=env, cwd=source, quiet_wait=False)
    per_host = json.loads(counted.output.strip().splitlines()[-1])
    return {"command": command, "wall": [s.wall_s for s in samples],
            "exit": sorted({s.exit_code for s in samples}),
            "background": max(s.background_cores for s in samples),
            "connections": sorted({pair[0] for pair in per_host.values()}),
            "round_trips": sorted({pair[1] for pair in per_host.values()})}


def table(nodes: int, rows: list[dict[str, Any]], source: Path) -> str:
    lines = [f"nodeprov from {source}, {nodes} nodes",
             "| command | wall s, median (min-max) | exit | connections / host | "
             "round trips / host | background cores (max) |", "|---|---|---|---|---|---|"]
    for row in rows:
        lines.append(f"| {row['command']} | {spread(row['wall'])} | "
                     f"{','.join(map(str, row['exit']))} | "
                     f"{'-'.join(map(str, row['connections']))} | "
                     f"{'-'.join(map(str, row['round_trips']))} | {row['background']:.2f} |")
    return "\n".join(lines)


def main(argv_: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", default="8", help="comma-separated node counts")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--source", type=Path, default=REPO,
                        help="the folder holding the nodeprov package to measure")
    parser.add_argument("--root", type=Path, default=Path("/srv/nodeprov-bench-verify"))
    parser.add_argument("--count", action="store_true",
                        help="internal: run the CLI with the remaining arguments, print "
                             "{host: [connections, round trips]} as JSON")
    parser.add_argument("rest", nargs="*")
    args = parser.parse_args(argv_)
    if args.count:
        print(json.dumps(count(args.rest)))
        return 0
    playbook = Nodeprov.playbook
    source = args.source.resolve()
    with OwnCpu() as own:
        for nodes in (int(n) for n in args.nodes.split(",")):
            with fresh_testbed(args.root / "testbed", nodes) as bed:
                log(f"{nodes} nodes: provisioning with {playbook.name}")
                first = timed([sys.executable, "-m", "nodeprov", "apply",
                               str(bed.inventory_path), "-p", str(playbook), "--forks",
                               str(nodes)], own=own, cwd=source, quiet_wait=False,
                              env={**os.environ, "PYTHONPATH": str(REPO)})
                if first.exit_code != 0:
                    log(first.output[-2000:])
                    return 1
                rows = [measure(command, bed.inventory_path, playbook, source, args.reps, own)
                        for command in COMMANDS]
            print(table(nodes, rows, source) + "\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
