"""The connectivity matrix: can every node resolve and reach every node where torchrun needs it?

Three round trips per node, all nodes in parallel: start a short-lived listener on a free port
inside the node's ephemeral range and on the rendezvous port (bound to its subnet address), probe
every node from every node (name resolution of its hostname, TCP to both ports), stop the
listeners::

    matrix = check_connectivity(hosts, sessions, facts, rdzv_port=29500)   # a matrix.Matrix
    for line in matrix.problems():       # node1 -> node3: TCP to 10.0.0.13:40001 (ephemeral
        print(line)                      # range) timed out: firewall on node3 blocks ...

The diagonal checks a node against itself: its own name must resolve to its subnet address too
(Debian's ``127.0.1.1 node1`` line makes gloo advertise loopback).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any

from nodeprov.proof.matrix import Check, Matrix
from nodeprov.remote.actions import STOP_MARKED
from nodeprov.util.fanout import on_every_name
from nodeprov.util.safejson import loads_object

if TYPE_CHECKING:
    from nodeprov.inventory import Host
    from nodeprov.remote.facts import Facts
    from nodeprov.remote.session import Session

STOP = STOP_MARKED  # kills a listener only if that pid still runs it (the pid may be reused)


# --- parsing recorded outputs (pure) -------------------------------------------------------------

def dns_check(source: str, target: str, hostname: str, address: str,
              observed: Mapping[str, Any]) -> Check:
    """A resolution is right when the name's first address is the target's subnet address."""
    detail = repr(hostname)
    if "error" in observed:
        return Check(source, target, "dns", "unresolved", detail, str(observed["error"]))
    addresses = [str(a) for a in observed.get("addresses", [])]
    if addresses and addresses[0] == address:
        return Check(source, target, "dns", "ok", detail, address)
    return Check(source, target, "dns", "wrong_address" if addresses else "unresolved", detail,
                 ", ".join(addresses) or "no address")


def parse_probe(source: str, stdout: str, targets: Sequence[Mapping[str, Any]]) -> list[Check]:
    """Checks from one node's probe output; ``targets`` is what the probe was given."""
    data = loads_object(stdout, what="the probe's answer")
    checks = []
    for target in targets:
        name = target["name"]
        found = data.get(name, {})
        checks.append(dns_check(source, name, target["hostname"], target["address"],
                                found.get("dns", {"error": "not probed"})))
        for kind in ("eph", "rdzv"):
            if kind not in target["ports"]:
                checks.append(Check(source, name, kind, "untested", ""))
                continue
            address, port = target["ports"][kind]
            checks.append(Check(source, name, kind, str(found.get(kind, "untested")),
                                f"{address}:{port}"))
    return checks


def listener_ports(listening: Mapping[str, Any], address: str,
                   rdzv_port: int) -> dict[str, tuple[str, int]]:
    """Where peers should connect, from a listener's output: only ports something listens on."""
    ports: dict[str, tuple[str, int]] = {}
    if isinstance(listening.get("eph"), int):
        ports["eph"] = (address, listening["eph"])
    if listening.get("rdzv") in ("listening", "busy"):
        ports["rdzv"] = (address, rdzv_port)
    return ports


def listener_errors(name: str, listening: Mapping[str, Any], address: str,
                    rdzv_port: int) -> list[str]:
    """Why a node's listener could not listen where it should, one line each."""
    found = []
    if "eph_error" in listening:
        found.append(f"{name}: connectivity: {listening['eph_error']}")
    if str(listening.get("rdzv", "")).startswith("error"):
        found.append(f"{name}: connectivity: cannot listen on {address}:{rdzv_port}: "
                     f"{listening['rdzv'][len('error: '):]}")
    if any("Cannot assign requested address" in line for line in found):
        found = [f"{line} (node_address {address} is not on the node: fix it in the inventory)"
                 for line in found]
    return found


# --- running it ----------------------------------------------------------------------------------

def check_connectivity(hosts: Sequence[Host], sessions: Mapping[str, Session],
                       facts: Mapping[str, Facts], rdzv_port: int,
                       timeout: float = 3.0) -> Matrix:
    """Probe every node from every node; ``timeout`` bounds each connection attempt."""
    started = time.monotonic()
    script = resources.files("nodeprov.nodeside").joinpath("netcheck.py").read_text()
    names = [host.name for host in hosts]
    by_name = {host.name: host for host in hosts}
    token = f"nodeprov-connectivity-{secrets.token_hex(6)}"
    errors: list[str] = []
    # every connection, then each that timed out once more, a few at a time: the probes' bound
    probe_seconds = timeout * (3 + len(names)) + 30
    # The stop step ends the listeners; this bounds them only if this machine never gets to it,
    # and outlasts every probe however late it starts on a busy machine.
    listen_seconds = 2 * probe_seconds

    def start(name: str) -> dict[str, Any]:
        if facts[name].python_path is None:
            raise RuntimeError("the node has no python3, which the check runs with")
        low, high = facts[name].ephemeral_port_range
        result = sessions[name].run(
            ["python3", "-c", script, "listen", by_name[name].node_address, str(low), str(high),
             str(rdzv_port), str(listen_seconds), token], task="connectivity", timeout=30)
        if result.exit_code != 0:
            raise RuntimeError(f"listener exited {result.exit_code}: "
                               f"{(result.stderr or result.stdout).strip()[-200:]}")
        listening = loads_object(result.stdout, what="the listener's answer")
        return listening

    listeners = on_every_name(names, start)
    targets = []
    for name in names:
        listening = listeners[name]
        address = by_name[name].node_address
        ports: dict[str, tuple[str, int]] = {}
        if isinstance(listening, Exception):
            errors.append(f"{name}: connectivity: cannot start a listener: {listening}")
        else:
            ports = listener_ports(listening, address, rdzv_port)
            errors += listener_errors(name, listening, address, rdzv_port)
        targets.append({"name": name, "hostname": facts[name].hostname, "address": address,
                        "ports": ports})

    def probe(name: str) -> list[Check]:
        result = sessions[name].run(["python3", "-c", script, "probe", str(timeout),
                                     json.dumps(targets)],
                                    task="connectivity", timeout=probe_seconds)
        if result.exit_code != 0:
            raise RuntimeError(f"probe exited {result.exit_code}: "
                               f"{(result.stderr or result.stdout).strip()[-200:]}")
        return parse_probe(name, result.stdout, targets)

    probed = on_every_name(names, probe)

    def stop(name: str) -> None:
        listening = listeners[name]
        if isinstance(listening, dict) and listening.get("pid"):
            sessions[name].run(["sh", "-c", STOP, "nodeprov-stop", str(listening["pid"]), token],
                               task="connectivity", timeout=30)

    on_every_name(names, stop)
    checks: list[Check] = []
    for name in names:
        found = probed[name]
        if isinstance(found, Exception):
            errors.append(f"{name}: connectivity: cannot probe the other nodes: {found}")
            checks.extend(Check(name, target, kind, "untested", "")
                          for target in names for kind in ("dns", "eph", "rdzv"))
        else:
            checks.extend(found)
    return Matrix(tuple(names), tuple(checks), tuple(errors), time.monotonic() - started)
