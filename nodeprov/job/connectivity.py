"""The connectivity matrix: can every node resolve and reach every node where torchrun needs it?

Three round trips per node, all nodes in parallel: start a short-lived listener on a free port
inside the node's ephemeral range and on the rendezvous port (bound to its subnet address), probe
every node from every node (name resolution of its hostname, TCP to both ports), stop the
listeners::

    matrix = check_connectivity(hosts, sessions, facts, rdzv_port=29500)
    console.print(matrix.table())        # rows: from, columns: to; cells ok / dns / eph / rdzv
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
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any, Literal

from nodeprov.fanout import on_every_name

if TYPE_CHECKING:
    from rich.table import Table

    from nodeprov.inventory import Host
    from nodeprov.remote.facts import Facts
    from nodeprov.remote.session import Session

Kind = Literal["dns", "eph", "rdzv"]
KIND_NAMES: dict[Kind, str] = {"dns": "name resolution", "eph": "ephemeral range",
                               "rdzv": "rendezvous port"}
# argv: pid token; kills the listener only if that pid still runs it (the pid may be reused).
STOP = 'grep -qzxF -- "$2" "/proc/$1/cmdline" 2>/dev/null && kill -- "$1"; true'


@dataclass(frozen=True)
class Check:
    """One check from ``source`` to ``target``: status ``ok`` or what went wrong."""

    source: str
    target: str
    kind: Kind
    status: str  # ok, unresolved, wrong_address, timeout, ECONNREFUSED, EHOSTUNREACH, untested
    detail: str  # what was checked: "10.0.0.13:40001", or "'node3'"
    observed: str = ""  # resolver error or resolved addresses

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class Matrix:
    """Every check between ``nodes``, plus node-level errors (a listener or probe that failed)."""

    nodes: tuple[str, ...]
    checks: tuple[Check, ...]
    errors: tuple[str, ...] = ()
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.errors and all(check.ok for check in self.checks)

    def cell(self, source: str, target: str) -> str:
        """``ok``, the failed kinds (``dns,eph``), or ``?`` when nothing could be checked."""
        found = [c for c in self.checks if c.source == source and c.target == target]
        tested = [c for c in found if c.status != "untested"]
        failed = [c.kind for c in tested if not c.ok]
        if failed:
            return ",".join(failed)
        return "ok" if tested and len(tested) == len(found) else "?"

    def rows(self) -> list[tuple[str, ...]]:
        """Header row (``from \\ to``, the nodes), then one row per source node."""
        return [("from \\ to", *self.nodes),
                *((source, *(self.cell(source, target) for target in self.nodes))
                  for source in self.nodes)]

    def table(self) -> Table:
        from rich.table import Table

        header, *body = self.rows()
        table = Table(title="connectivity: rows from, columns to")
        for name in header:
            table.add_column(name)
        for source, *cells in body:
            table.add_row(source, *(f"[green]{c}[/]" if c == "ok" else f"[red]{c}[/]"
                                    for c in cells))
        return table

    def problems(self) -> list[str]:
        """One line per broken check, with the likely cause and the fix; node errors first."""
        return [*self.errors, *(explain(check, self.culprit(check)) for check in self.checks
                                if not check.ok and check.status != "untested")]

    def culprit(self, check: Check) -> str:
        """The node whose firewall most likely broke a TCP check: the target, unless other nodes
        reach the target while the source reaches no other node (a rule on the source that
        drops its own connections' replies, like a DROP on the ephemeral range without
        conntrack)."""
        def reached(source: str, target: str) -> bool:
            return any(c.ok for c in self.checks if c.kind == check.kind
                       and c.source == source and c.target == target)

        others = [n for n in self.nodes if n not in (check.source, check.target)]
        if (any(reached(other, check.target) for other in others)
                and not any(reached(check.source, other) for other in others)):
            return check.source
        return check.target


def explain(check: Check, culprit: str | None = None) -> str:
    """The broken check as one line: what failed, the likely cause on ``culprit`` (default: the
    target for TCP, the source for names), the fix.

    >>> explain(Check("node1", "node3", "eph", "timeout", "10.0.0.13:40001"))[:60]
    'node1 -> node3: TCP to 10.0.0.13:40001 (ephemeral range) tim'
    """
    source, target = check.source, check.target
    pair = f"{source} -> {target}"
    if check.kind == "dns":
        hosts_fix = f"nodeprov apply --limit {source} --tags hosts"
        if check.status == "unresolved":
            return (f"{pair}: {source} cannot resolve {check.detail} ({check.observed}): "
                    f"/etc/hosts on {source} lacks the node names ({hosts_fix})")
        return (f"{pair}: {source} resolves {check.detail} to {check.observed}, not {target}'s "
                f"subnet address: an /etc/hosts line (Debian's 127.0.1.1) or DNS maps it "
                f"elsewhere ({hosts_fix})")
    what = f"{pair}: TCP to {check.detail} ({KIND_NAMES[check.kind]})"
    if culprit == source and source != target:
        return (f"{what} failed ({check.status}) while other nodes reach {target}: firewall on "
                f"{source} drops its own connections (a DROP rule on the ephemeral range "
                f"without conntrack, or OUTPUT rules) (nodeprov apply --limit {source} "
                f"--tags firewall)")
    firewall_fix = f"nodeprov apply --limit {target} --tags firewall"
    if check.status == "timeout":
        return (f"{what} timed out: firewall on {target} blocks the node subnet "
                f"({firewall_fix})")
    if check.status == "ECONNREFUSED":
        return (f"{what} refused: firewall on {target} rejects the node subnet (nodeprov "
                f"listened there) ({firewall_fix})")
    if check.status == "EHOSTUNREACH":
        return (f"{what} failed, no route to host: {target} is down or not at that address, or "
                f"its firewall rejects with icmp-host-prohibited (check {target}'s link and "
                f"node_address; {firewall_fix})")
    if check.status == "ENETUNREACH":
        return (f"{what} failed, network unreachable: {source} has no route to the node subnet "
                f"(check {source}'s interface in node_subnet)")
    return f"{what} failed: {check.status} (check the link between {source} and {target})"


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
    data = json.loads(stdout)
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
    script = resources.files("nodeprov.job").joinpath("netcheck.py").read_text()
    names = [host.name for host in hosts]
    by_name = {host.name: host for host in hosts}
    token = f"nodeprov-connectivity-{secrets.token_hex(6)}"
    errors: list[str] = []

    def start(name: str) -> dict[str, Any]:
        if facts[name].python_path is None:
            raise RuntimeError("the node has no python3, which the check runs with")
        low, high = facts[name].ephemeral_port_range
        result = sessions[name].run(
            ["python3", "-c", script, "listen", by_name[name].node_address, str(low), str(high),
             str(rdzv_port), str(timeout * 3), token], task="connectivity", timeout=30)
        if result.exit_code != 0:
            raise RuntimeError(f"listener exited {result.exit_code}: "
                               f"{(result.stderr or result.stdout).strip()[-200:]}")
        listening: dict[str, Any] = json.loads(result.stdout)
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
                                    task="connectivity", timeout=timeout * 3 + 30)
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
