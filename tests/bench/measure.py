"""Timing one command: wall time, the machine's CPU (/proc/stat), the benchmark's own CPU.

    with OwnCpu() as own:                  # this process and all it starts, nodes included
        sample = timed(["nodeprov", "apply", ...], own=own)
    sample.wall_s, sample.machine_cpu_s, sample.own_cpu_s, sample.background_cores

The machine's CPU counts everything, other people's processes too; the own CPU comes from a
cpuacct cgroup that this process joins before it starts the testbeds, so it holds the tools,
their ssh clients and every node's sshd and commands, and nothing else. Where no such cgroup
can be made it is None.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
CPUACCT = Path("/sys/fs/cgroup/cpuacct")
QUIET_CORES = 0.3  # a machine busier than this (other people's jobs) skews a timing


def busy_jiffies() -> int:
    """user + nice + system + irq + softirq of all CPUs, from /proc/stat's first line."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    user, nice, system, _idle, _iowait, irq, softirq = map(int, fields[1:8])
    return user + nice + system + irq + softirq


class OwnCpu:
    """A cpuacct cgroup holding this process and everything it starts from now on."""

    def __init__(self) -> None:
        self.path: Path | None = None

    def __enter__(self) -> OwnCpu:
        path = CPUACCT / f"nodeprov-bench-{os.getpid()}"
        try:
            path.mkdir()
            (path / "cgroup.procs").write_text(str(os.getpid()))
        except OSError:  # no cgroup v1 cpuacct here, or not root: own CPU is not measured
            if path.exists():
                path.rmdir()
            return self
        self.path = path
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.path is None:
            return
        (CPUACCT / "cgroup.procs").write_text(str(os.getpid()))
        for _ in range(50):  # leftover processes (ssh masters) leave or die first
            try:
                self.path.rmdir()
                return
            except OSError:
                time.sleep(0.1)

    def seconds(self) -> float | None:
        if self.path is None:
            return None
        return int((self.path / "cpuacct.usage").read_text()) / 1e9


def background_cores(seconds: float = 1.0, own: OwnCpu | None = None) -> float:
    """Cores busy over ``seconds`` with work that is not ours (other people's tests)."""
    machine, mine = busy_jiffies(), own.seconds() if own else None
    time.sleep(seconds)
    busy = (busy_jiffies() - machine) / CLOCK_TICKS
    if mine is not None and own is not None:
        busy -= (own.seconds() or 0.0) - mine
    return max(busy, 0.0) / seconds


def wait_quiet(own: OwnCpu | None, patience: float = 20.0) -> float:
    """Wait (up to ``patience`` seconds) for a quiet machine; the background load last seen."""
    deadline = time.monotonic() + patience
    load = background_cores(own=own)
    while load > QUIET_CORES and time.monotonic() < deadline:
        load = background_cores(own=own)
    return load


@dataclass(frozen=True)
class Sample:
    wall_s: float
    machine_cpu_s: float
    own_cpu_s: float | None
    background_cores: float
    exit_code: int
    output: str
    peak_rss_mb: float | None = None  # the command's own process (nodeprov: every SSH client)
    peak_threads: int | None = None  # its process tree's, at once
    peak_tree_rss_mb: float | None = None  # its process tree's, at once (pip it starts too)
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)  # the machine's load average


def _children() -> dict[int, list[int]]:
    """Every process's children, from /proc/PID/stat (this kernel has no .../children file)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue  # ended meanwhile
        children.setdefault(parent, []).append(int(stat.parent.name))
    return children


def processes_pss_mb(roots: Sequence[int]) -> float:
    """Proportional memory (Pss, /proc/PID/smaps_rollup) of ``roots`` and their descendants:
    what a testbed's nodes hold, whatever else the machine runs."""
    children, wanted, pending = _children(), set[int](), list(roots)
    while pending:
        pid = pending.pop()
        wanted.add(pid)
        pending += children.get(pid, [])
    total_kb = 0
    for pid in wanted:
        try:
            text = Path(f"/proc/{pid}/smaps_rollup").read_text()
        except OSError:
            continue
        total_kb += sum(int(line.split()[1]) for line in text.splitlines()
                        if line.startswith("Pss:"))
    return total_kb / 1024


def _status(pid: int) -> dict[str, str]:
    try:
        return dict(line.split(":", 1) for line in
                    Path(f"/proc/{pid}/status").read_text().splitlines())
    except (OSError, ValueError):
        return {}  # ended (or a zombie without these fields)


class Peaks:
    """Samples a process tree's resident memory and threads (/proc/PID/status) until its root
    ends: the most the tree held at once (sum of VmRSS, sum of Threads) and the root's own
    high-water mark (VmHWM). The root every 0.05 s; its descendants (pip that nodeprov starts)
    every second, as listing them reads every process's stat: with 128 nodes, ~1000 files."""

    def __init__(self, pid: int) -> None:
        self.pid, self.rss_mb, self.threads, self.tree_rss_mb = pid, 0.0, 0, 0.0
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        descendants_kb = descendants_threads = 0
        next_scan = 0.0
        while True:
            root = _status(self.pid)
            if "VmHWM" not in root:
                return
            if time.monotonic() >= next_scan:
                next_scan = time.monotonic() + 1.0
                children = _children()
                pending, descendants_kb, descendants_threads = children.get(self.pid, []), 0, 0
                while pending:
                    pid = pending.pop()
                    pending += children.get(pid, [])
                    status = _status(pid)
                    descendants_kb += int(status.get("VmRSS", "0 kB").split()[0])
                    descendants_threads += int(status.get("Threads", "0"))
            self.rss_mb = max(self.rss_mb, int(root["VmHWM"].split()[0]) / 1024)
            self.tree_rss_mb = max(self.tree_rss_mb, (int(root["VmRSS"].split()[0])
                                                      + descendants_kb) / 1024)
            self.threads = max(self.threads, int(root["Threads"]) + descendants_threads)
            time.sleep(0.05)

    def join(self) -> None:
        self._thread.join(5)


def timed(argv: Sequence[str], *, own: OwnCpu | None, env: Mapping[str, str] | None = None,
          cwd: Path | None = None, quiet_wait: bool = True, timeout: float = 1800,
          patience: float = 20.0) -> Sample:
    """Run ``argv`` to the end once the machine is quiet (waiting up to ``patience`` s); its
    output is stdout then stderr. A run past ``timeout`` is killed and reads as exit code -9."""
    load = wait_quiet(own, patience) if quiet_wait else 0.0
    load_before = os.getloadavg()
    own_before = own.seconds() if own else None
    machine_before = busy_jiffies()
    started = time.perf_counter()
    with subprocess.Popen(list(argv), env=dict(env) if env is not None else None, cwd=cwd,
                          stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as process:
        peaks = Peaks(process.pid)
        try:
            stdout, stderr = process.communicate(timeout=timeout)
            exit_code, output = process.returncode, stdout + stderr
        except subprocess.TimeoutExpired:
            process.kill()
            exit_code, output = -9, f"killed after {timeout} s: {process.communicate()[0]!r}"
    wall = time.perf_counter() - started
    peaks.join()
    machine = (busy_jiffies() - machine_before) / CLOCK_TICKS
    own_after = own.seconds() if own else None
    own_cpu = own_after - own_before if own_after is not None and own_before is not None else None
    return Sample(wall, machine, own_cpu, load, exit_code, output, peaks.rss_mb or None,
                  peaks.threads or None, peaks.tree_rss_mb or None, load_before)


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def spread(values: Sequence[float], digits: int = 2) -> str:
    """``median (min-max)``, or the one value."""
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return (f"{median(values):.{digits}f} ({min(values):.{digits}f}-"
            f"{max(values):.{digits}f})")
