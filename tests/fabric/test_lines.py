"""Finding NCCL's lines in hostile input stays linear: a log is untrusted, and one line of a
node's output may be 64 KiB (``MAX_LINE``). SYNTHETIC lines, built to make a regex backtrack;
the 18 s one-word line is what the reader took before its host search was anchored."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from nodeprov.fabric import read_logs
from nodeprov.fabric.lines import MAX_LINE, parse_line
from nodeprov.fabric.text import fabric_text

DATA = Path(__file__).parents[1] / "data" / "nccl-logs"
HOSTILE = {
    "one word": "a" * MAX_LINE,
    "one word and NCCL": "a" * (MAX_LINE - 20) + " NCCL INFO x",
    "colons": "ab:" * (MAX_LINE // 3) + " NCCL ",
    "near misses": "h:1:1 [0] " * (MAX_LINE // 10 - 1) + "NCCL ",
    "gdr words": "NCCL INFO GPU Direct RDMA Disabled for GPU (distance 5 > " * 1100,
    "colours": " \x1b[1m2025-05-16T16:39:51Z" * (MAX_LINE // 26) + "NCCL ",
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_line_is_read_in_milliseconds(name: str) -> None:
    started = time.perf_counter()
    parse_line(HOSTILE[name])
    assert time.perf_counter() - started < 0.25  # quadratic: seconds (18 s for "one word")


def test_a_100k_line_log_is_read_in_linear_time(tmp_path: Path) -> None:
    """Every recorded log's lines, repeated to 100,000 lines and to 25,000: four times the
    lines take about four times as long (a bound of ten), not sixteen."""
    lines = [line for path in sorted(DATA.glob("*.log")) for line in path.read_text().splitlines()]
    timings = []
    for count in (25_000, 100_000):
        log = tmp_path / f"{count}.log"
        log.write_text("\n".join(lines[i % len(lines)] for i in range(count)) + "\n")
        started = time.perf_counter()
        read_logs([log])
        timings.append(time.perf_counter() - started)
    assert timings[1] < 10 * timings[0] and timings[1] < 20


def test_hosts_start_where_a_word_starts() -> None:
    """A markdown back-tick or a glued ISO time is not part of the host (nccl#928's prose,
    aws-ofi-nccl#889's CloudWatch copy); mpirun's, torchrun's, Ray's, srun -l's and a
    logger's time prefixes end before it (the last four lines SYNTHETIC)."""
    hosts = [found.host if (found := parse_line(raw)) else None for raw in (
        "error log `H100-2:19989:20082 [1] transport/net_ib.cc:1295 NCCL WARN NET/IB : x",
        "  | 2025-05-16T16:39:51.208-07:00ip-10-36-29-253:79:79 [0] NCCL INFO Bootstrap : x",
        "[1,26]<stdout>:ip-172-32-36-209:8716:9558 [2] NCCL INFO Ring 00",
        "[rank0]:costa-671b-5-worker-1:1:2 [0] NCCL INFO x",
        "<cluster_name>:924:924 [5] NCCL INFO cudaDriverVersion 12010",
        "00ip-10-0-0-1x:1:1 [0] NCCL INFO x",
        "\x1b[36m(RayWorkerWrapper pid=641)\x1b[0m \x1b[32mnode-1:641:641 [0] NCCL INFO x",
        "[default0]:gpu-st-p4d-24xlarge-1:12:34 [0] NCCL INFO x",  # torchelastic's tee
        "12: node.dc-2.example.org:12:34 [0] NCCL INFO x",          # srun -l
        "2024-05-01 12:00:00,123 node1:12:34 [0] NCCL INFO x")]
    assert hosts == ["H100-2", "ip-10-36-29-253", "ip-172-32-36-209", "costa-671b-5-worker-1",
                     "<cluster_name>", "00ip-10-0-0-1x", "node-1", "gpu-st-p4d-24xlarge-1",
                     "node.dc-2.example.org", "node1"]


def test_windows_line_ends_and_colour_codes_are_not_read_as_text(tmp_path: Path) -> None:
    """SYNTHETIC lines (a Windows copy, a coloured terminal): the network is still read, and
    the quoted evidence keeps the escape as text, escaped where it is shown."""
    log = tmp_path / "crlf.log"
    log.write_bytes(b"\x1b[32mn1:10:11 [0] NCCL INFO Using network Socket\x1b[0m\r\n"
                    b"n1:10:11 [0] NCCL INFO NET/IB : No device found.\r\n")
    report = read_logs([log])
    (node,) = report.nodes
    assert (node.node, node.network, [c.code for c in node.causes]) == (
        "n1", "Socket", ["no-fast-fabric"])
    assert not any("\r" in c.evidence for c in node.causes)
    assert all("\x1b" not in line for line in fabric_text(report))
