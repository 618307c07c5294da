"""The node side of the connectivity matrix: listen on a node, probe every node from a node.

nodeprov runs this file's text with the node's system ``python3 -c`` (standard library only, any
python3 from 3.8), values as arguments::

    python3 netcheck.py listen 10.0.0.11 32768 60999 29500 9 TOKEN
    {"eph": 40001, "rdzv": "listening", "pid": 4242}
    python3 netcheck.py probe 3 '[{"name": "node2", "hostname": "node2",
                                    "ports": {"eph": ["10.0.0.12", 40002]}}]'
    {"node2": {"dns": {"addresses": ["10.0.0.12"]}, "eph": "ok"}}

``listen`` binds a free port of the range (binding is the only race-free test that a port is
free, so a running job's ports are skipped) and the rendezvous port on the address, prints
where, and leaves a detached child accepting connections for LIFETIME seconds; TOKEN only marks
its command line, so the stop step can tell it from any other process. ``probe`` resolves each
target's hostname and connects to its ports, all at once; a connection ends as ``ok``,
``timeout`` or its errno name (``ECONNREFUSED``, ``EHOSTUNREACH``, ...). A connection that timed
out is tried once more, a few at a time: hundreds of attempts started at once on a busy node
can miss their timeout for want of CPU, where a firewall that drops them times out again.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import random
import select
import socket
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

LISTEN_TRIES = 50
RETRY_WORKERS = 16  # second attempts at once, each bounded by the timeout


def listen(address: str, low: int, high: int, rdzv_port: int, lifetime: float) -> None:
    listeners: list[socket.socket] = []
    out: dict[str, Any] = {}

    def bind(port: int) -> None:
        sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET)
        # TIME_WAIT left by a job that just ended is not "busy"; a listening socket still is.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((address, port))
            sock.listen(128)
        except OSError:
            sock.close()
            raise
        listeners.append(sock)

    for port in random.sample(range(low, high + 1), min(LISTEN_TRIES, high - low + 1)):
        try:
            bind(port)
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                continue
            out["eph_error"] = f"cannot listen on {address}: {error.strerror}"
            break
        out["eph"] = port
        break
    else:
        out["eph_error"] = f"no free port in {low}-{high} after {LISTEN_TRIES} tries"
    try:
        bind(rdzv_port)
        out["rdzv"] = "listening"
    except OSError as error:
        # A running job's store holds it: connecting to it still tests the path.
        out["rdzv"] = "busy" if error.errno == errno.EADDRINUSE else f"error: {error.strerror}"
    child = os.fork() if listeners else 0
    if child or not listeners:
        out["pid"] = child
        print(json.dumps(out), flush=True)
        os._exit(0)
    # The child: detached, with no hold on the SSH session's output, so the command returns.
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    serve(listeners, time.monotonic() + lifetime)


def serve(listeners: list[socket.socket], deadline: float) -> None:
    accepted: list[socket.socket] = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        for sock in select.select(listeners + accepted, [], [], left)[0]:
            if sock in listeners:
                with contextlib.suppress(OSError):  # the prober may give up first
                    accepted.append(sock.accept()[0])
            else:
                # The prober closed first, so TIME_WAIT stays on its side, never on rdzv_port.
                accepted.remove(sock)
                sock.close()


def resolve(name: str) -> dict[str, Any]:
    try:
        infos = socket.getaddrinfo(name, None, socket.AF_UNSPEC, socket.SOCK_STREAM)
    except socket.gaierror as error:
        return {"error": error.strerror or str(error)}
    return {"addresses": list(dict.fromkeys(str(info[4][0]) for info in infos))}


def connect(address: str, port: int, timeout: float) -> str:
    try:
        socket.create_connection((address, port), timeout=timeout).close()
    except socket.timeout:  # noqa: UP041 - TimeoutError catches it only from Python 3.10
        return "timeout"
    except OSError as error:
        return errno.errorcode.get(error.errno or 0, str(error))
    return "ok"


def probe_all(timeout: float, targets: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """{target name: {"dns": resolved, kind: connection outcome}}; lookups still stuck a
    while after the connections ended count as timed out."""
    pool = ThreadPoolExecutor(max(1, 3 * len(targets)))
    lookups = {target["name"]: pool.submit(resolve, target["hostname"]) for target in targets}
    ports = {(target["name"], kind): (address, port) for target in targets
             for kind, (address, port) in target["ports"].items()}
    # Each connection ends by its own socket timeout, however late its thread started.
    connections = {key: pool.submit(connect, *where, timeout) for key, where in ports.items()}
    outcome = {key: job.result() for key, job in connections.items()}
    again = [key for key, status in outcome.items() if status == "timeout"]
    with ThreadPoolExecutor(RETRY_WORKERS) as retries:
        retried = {key: retries.submit(connect, *ports[key], timeout) for key in again}
        outcome.update({key: job.result() for key, job in retried.items()})
    out: dict[str, dict[str, Any]] = {name: {} for name in lookups}
    # A resolver stuck on an unreachable DNS server must not stall the matrix.
    deadline = time.monotonic() + timeout + 2
    for name, lookup in lookups.items():
        try:
            out[name]["dns"] = lookup.result(max(0.0, deadline - time.monotonic()))
        except Exception:
            out[name]["dns"] = {"error": "lookup timed out"}
    for (name, kind), status in outcome.items():
        out[name][kind] = status
    pool.shutdown(wait=False)
    return out


def probe(timeout: float, targets: list[dict[str, Any]]) -> None:
    print(json.dumps(probe_all(timeout, targets)), flush=True)
    os._exit(0)  # without waiting for stuck lookups


def main(argv: list[str]) -> None:
    if argv[0] == "listen":
        address, low, high, rdzv_port, lifetime = argv[1:6]
        listen(address, int(low), int(high), int(rdzv_port), float(lifetime))
    elif argv[0] == "probe":
        probe(float(argv[1]), json.loads(argv[2]))
    else:
        sys.exit(f"usage: {__doc__}")


if __name__ == "__main__":
    main(sys.argv[1:])
