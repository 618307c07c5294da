"""The verification job beside iperf3: all-reduce bus bandwidth on 2 and 4 nodes, TCP bandwidth
between the same nodes, and the time from launching the job to its verdict.

    bed, seconds = provision(Path("/srv/nodeprov-bench/job"), nodes=4)  # full site.yaml + torch
    record = verification(bed, 2)      # {"busbw": {bytes: GB/s}, "duration_s": ..., ...}
    flows = iperf3_flows(bed, [("node1", "node2")])   # [GB/s]

torch comes from the machine's local wheels (the nodes are offline): the testbed's inventory
gets ``pip_find_links: [/opt/wheels]`` and ``pip_index_url: file:///opt/pypi/simple``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from nodeprov.inventory import load_inventory
from nodeprov.proof.launch import JobLaunch, run_job
from nodeprov.remote.options import SshOptions
from nodeprov.remote.session import Session
from nodeprov.testbed.cluster import Testbed
from nodeprov.testbed.lifecycle import up
from tests.mirrors import LOCAL_MIRRORS

VENV = "/opt/nodeprov/venv"
RDZV_PORT = 29500
MAX_BYTES = 64 << 20  # job_max_bytes' default
JOB_TIMEOUT = 120  # job_timeout's default
MIRROR_VARS = {"pip_find_links": ["/opt/wheels"], "pip_index_url": "file:///opt/pypi/simple",
               "torch_cuda": "cpu"}
IPERF_SECONDS = 5


def provision(directory: Path, nodes: int) -> tuple[Testbed, float]:
    """A testbed with nodeprov's full default playbook applied (torch included); the seconds
    `nodeprov apply` took. The caller takes the testbed down."""
    bed = up(directory, nodes=nodes, extra_vars=MIRROR_VARS, shared=LOCAL_MIRRORS)
    started = time.perf_counter()
    applied = subprocess.run([str(Path(sys.executable).with_name("nodeprov")), "apply",
                              str(bed.inventory_path)], capture_output=True, text=True,
                             stdin=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    if applied.returncode != 0:
        raise RuntimeError(f"nodeprov apply (torch) failed: {applied.stdout[-2000:]}"
                           f"{applied.stderr[-2000:]}")
    return bed, seconds


def verification(bed: Testbed, nodes: int) -> dict[str, Any]:
    """Run the job on the first ``nodes`` nodes: verdict, busbw per size, launch-to-verdict
    (run_job's own clock) and the wall time with connecting and reading facts."""
    started = time.perf_counter()
    hosts = list(load_inventory(bed.inventory_path).hosts)[:nodes]
    sessions = {host.name: Session(host, SshOptions()) for host in hosts}
    try:
        for session in sessions.values():
            session.open()
        facts = {name: session.gather([])[0] for name, session in sessions.items()}
        outcome = run_job(hosts, sessions, facts,
                          JobLaunch("auto", VENV, RDZV_PORT, JOB_TIMEOUT, MAX_BYTES))
    finally:
        for session in sessions.values():
            session.close()
    wall = time.perf_counter() - started
    sizes = outcome.result.sizes if outcome.result else ()
    return {"nodes": nodes, "ok": outcome.ok, "verdict": outcome.verdict,
            "failures": outcome.failures, "duration_s": outcome.duration_s, "wall_s": wall,
            # the job's own clock: process group, DDP step and sweep, without torch's import
            "job_s": outcome.result.duration_s if outcome.result else None,
            "busbw": {row.bytes: row.busbw_gbps for row in sizes},
            "algbw": {row.bytes: row.algbw_gbps for row in sizes}}


def data_port(bed: Testbed, node: str) -> int:
    """A port in the node's ephemeral range: the firewall opens it to the node subnet."""
    low, high = map(int, bed.exec(node, "cat", "/proc/sys/net/ipv4/ip_local_port_range",
                                  check=True).stdout.split())
    return (low + high) // 2


def iperf3_flows(bed: Testbed, pairs: list[tuple[str, str]]) -> list[float]:
    """Run one iperf3 TCP flow per (client, server) pair, all at once; GB/s each, as the
    server received them."""
    port = data_port(bed, pairs[0][1])
    servers = [subprocess.Popen(bed.exec_argv(server, ["iperf3", "-s", "-1", "-p", str(port)]),
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL) for _client, server in pairs]
    try:
        _await_listening(bed, [server for _client, server in pairs], port)
        clients = [subprocess.Popen(bed.exec_argv(client, [
            "iperf3", "-c", bed.address(server), "-p", str(port), "-t", str(IPERF_SECONDS),
            "-J"]), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True)
            for client, server in pairs]
        outputs = [client.communicate(timeout=IPERF_SECONDS + 30)[0] for client in clients]
    finally:
        for server in servers:  # only ours, by their own handles
            if server.poll() is None:
                server.kill()
            server.wait()
    return [json.loads(output)["end"]["sum_received"]["bits_per_second"] / 8e9
            for output in outputs]


def _await_listening(bed: Testbed, nodes: list[str], port: int) -> None:
    for node in nodes:
        for _ in range(50):
            listening = bed.exec(node, "ss", "-Htln", f"sport = :{port}").stdout
            if listening.strip():
                break
            time.sleep(0.1)
        else:
            raise RuntimeError(f"{node}: iperf3 -s did not listen on port {port}")


def ring(nodes: list[str]) -> list[tuple[str, str]]:
    """Each node sends to the next, as a ring all-reduce does: node1->node2, ..., nodeN->node1."""
    return [(node, nodes[(index + 1) % len(nodes)]) for index, node in enumerate(nodes)]
