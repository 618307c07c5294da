"""Reading a node's large output: nodeprov's runner (remote/capture.py: 64 KiB reads, invoke's
join only for a watcher) beside Fabric's stock runner, on one fresh testbed node.

    sudo .venv/bin/python -m tests.bench.bigread          # 1, 4, 8 MB, 3 repetitions each

Prints a Markdown table of median seconds per read.
"""

from __future__ import annotations

import statistics
import time

from fabric.runners import Remote

from nodeprov.inventory import load_inventory
from nodeprov.remote.dial import connect
from nodeprov.remote.hostkeys import SshFiles
from nodeprov.remote.options import SshOptions
from nodeprov.testbed.lifecycle import temporary

SIZES = (1_000_000, 4_000_000, 8_000_000)
REPS = 3


def seconds(connection: object, size: int) -> float:
    """The median time of REPS reads of ``size`` bytes with the connection's current runner."""
    times = []
    for _ in range(REPS):
        started = time.monotonic()
        result = connection.run(f"head -c {size} /dev/zero", hide=True)  # type: ignore[attr-defined]
        times.append(time.monotonic() - started)
        assert len(result.stdout) == size
    return statistics.median(times)


def main() -> None:
    with temporary(nodes=1) as bed:
        host = load_inventory(bed.inventory_path).hosts[0]
        connection = connect(host, SshOptions(), SshFiles())
        try:
            ours = {size: seconds(connection, size) for size in SIZES}
            connection.config.runners.remote = Remote  # Fabric's own, as before capture.py
            stock = {size: seconds(connection, size) for size in SIZES}
        finally:
            connection.close()
    print("| output | nodeprov (s) | Fabric's runner (s) |\n| --- | --- | --- |")
    for size in SIZES:
        print(f"| {size / 1e6:g} MB | {ours[size]:.2f} | {stock[size]:.2f} |")


if __name__ == "__main__":
    main()
