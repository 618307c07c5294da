"""Node-side install speed, side by side: ``python -m venv`` + pip against nodeprov's uv path.

    sudo .venv/bin/python -m tests.bench.installs --reps 2

On one fresh test cluster node, from the cluster's local mirrors (/opt/wheels, /opt/pypi), each
repetition builds a venv and installs torch twice: with the commands nodeprov ran before uv
(``python -m venv``, then ``pip install``: ``installer.install`` without uv) and with the
commands it runs now (``installer.create_venv`` and ``installer.install``, uv pushed first, as
nodeprov does once per node). The wall time is measured here, the CPU time is what the node's
shell reports for its children (``times``). A markdown table goes to stdout.
"""

from __future__ import annotations

import argparse
import base64
import statistics
import sys
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path

from nodeprov.testbed.cluster import Testbed
from nodeprov.testbed.lifecycle import down, up
from nodeprov.wheels import installer
from nodeprov.wheels.installer import Origin
from nodeprov.wheels.wheelhouse import fetch, manylinux_platforms
from tests.mirrors import LOCAL_MIRRORS

SOURCES = ("--find-links", "/opt/wheels", "--index-url", "file:///opt/pypi/simple")
SPEC = "torch==2.13.0+cpu"
NODE = "node1"
# Runs argv, then prints the CPU its children used: `times`' second line, "0m1.5s 0m0.3s".
_TIMED = 'status=0; "$@" >/dev/null 2>&1 || status=$?; times; exit "$status"'


def timed(bed: Testbed, argv: Sequence[str]) -> tuple[float, float]:
    """Wall and CPU seconds of ``argv`` on the node."""
    started = time.monotonic()
    done = bed.exec(NODE, "sh", "-c", _TIMED, "timed", *argv)
    wall = time.monotonic() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(argv)[:200]} exited {done.returncode} on {NODE}: {done.stderr}")
    user, system = done.stdout.splitlines()[-1].split()
    return wall, _seconds(user) + _seconds(system)


def _seconds(text: str) -> float:
    minutes, _, seconds = text.rstrip("s").partition("m")
    return int(minutes) * 60 + float(seconds)


def put_uv(bed: Testbed, cache: Path) -> float:
    """uv on the node where nodeprov puts it (the wheel as nodeprov downloads it); seconds."""
    started = time.monotonic()
    platforms = [a for tag in manylinux_platforms((2, 36), "x86_64") for a in ("--platform", tag)]
    fetch(cache, ["download", "--no-deps", "--only-binary=:all:", *platforms, "--",
                  f"uv=={installer.UV_VERSION}"])
    (wheel,) = cache.glob("uv-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        binary = archive.read(f"uv-{installer.UV_VERSION}.data/scripts/uv")
    bed.exec(NODE, "sh", "-c", 'mkdir -p "${1%/*}" && base64 -d > "$1" && chmod 755 "$1"',
             "put", installer.UV, input=base64.b64encode(binary).decode(), check=True)
    return time.monotonic() - started


def one_round(bed: Testbed) -> dict[str, tuple[float, float]]:
    """(wall, cpu) of each step, both ways, in fresh venvs."""
    pip_venv, uv_venv = "/opt/bench-pip/venv", "/opt/bench-uv/venv"
    bed.exec(NODE, "rm", "-rf", "--", "/opt/bench-pip", "/opt/bench-uv", check=True)
    steps = {
        "pip: python -m venv": timed(bed, installer.create_venv("/usr/bin/python3", pip_venv,
                                                                with_uv=False)[0].argv),
        "pip: pip install torch": timed(bed, installer.install(pip_venv, [SPEC], Origin(SOURCES),
                                                               with_uv=False).argv),
    }
    create, seed = installer.create_venv("/usr/bin/python3", uv_venv, with_uv=True)
    steps["uv: venv --without-pip"] = timed(bed, create.argv)
    steps["uv: pip into the venv"] = timed(bed, seed.argv)
    steps["uv: uv pip install torch"] = timed(bed, installer.install(uv_venv, [SPEC],
                                                                     Origin(SOURCES)).argv)
    check = bed.exec(NODE, f"{uv_venv}/bin/python", "-W", "ignore", "-c",
                     "import torch; print(torch.__version__)")
    if check.stdout.strip() != "2.13.0+cpu" or bed.exec(
            NODE, f"{uv_venv}/bin/pip", "--version").returncode != 0:
        sys.exit(f"the uv venv is not usable: {check.stdout} {check.stderr}")
    bed.exec(NODE, "rm", "-rf", "--", "/opt/bench-pip", "/opt/bench-uv", check=True)
    return steps


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--dir", type=Path, default=Path("/srv/nodeprov-bench-installs"))
    options = parser.parse_args(argv)
    down(options.dir)
    bed = up(options.dir, nodes=1, shared=LOCAL_MIRRORS)
    try:
        push = put_uv(bed, Path("/tmp/nodeprov-bench-uv"))
        rounds = [one_round(bed) for _ in range(options.reps)]
    finally:
        down(options.dir)
    print(f"| step (median of {options.reps}) | wall s | CPU s |\n|---|---:|---:|")
    totals = {"pip": [0.0, 0.0], "uv": [0.0, 0.0]}
    for step in rounds[0]:
        wall = statistics.median(r[step][0] for r in rounds)
        cpu = statistics.median(r[step][1] for r in rounds)
        totals[step.partition(":")[0]][0] += wall
        totals[step.partition(":")[0]][1] += cpu
        print(f"| {step} | {wall:.2f} | {cpu:.2f} |")
    (pip_wall, pip_cpu), (uv_wall, uv_cpu) = totals["pip"], totals["uv"]
    print(f"| **pip total** | {pip_wall:.2f} | {pip_cpu:.2f} |\n"
          f"| **uv total** | {uv_wall:.2f} | {uv_cpu:.2f} |\n"
          f"| **uv / pip** | {uv_wall / pip_wall:.2f} | {uv_cpu / pip_cpu:.2f} |")
    print(f"\nuv put on the node once (download here, copy): {push:.1f} s, not in the totals")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
