"""The connectivity matrix's results: every check between the nodes, what each broken one means
and the node whose firewall or /etc/hosts to fix (``connectivity`` runs the checks)::

    matrix = Matrix(("node1", "node3"), (Check("node1", "node3", "eph", "timeout",
                                               "10.0.0.13:40001"),))
    console.print(matrix.table())        # rows: from, columns: to; cells ok / dns / eph / rdzv
    for line in matrix.problems():       # node1 -> node3: TCP to 10.0.0.13:40001 (ephemeral
        print(line)                      # range) timed out: firewall on node3 blocks ...
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from rich.table import Table

Kind = Literal["dns", "eph", "rdzv"]
KIND_NAMES: dict[Kind, str] = {"dns": "name resolution", "eph": "ephemeral range",
                               "rdzv": "rendezvous port"}
TABLE_NODES = 16  # more nodes than this: the lines say it, a table would not fit


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

    @cached_property
    def _pairs(self) -> dict[tuple[str, str], list[Check]]:
        pairs: dict[tuple[str, str], list[Check]] = {}
        for check in self.checks:
            pairs.setdefault((check.source, check.target), []).append(check)
        return pairs

    @cached_property
    def _reached(self) -> frozenset[tuple[Kind, str, str]]:
        return frozenset((c.kind, c.source, c.target) for c in self.checks if c.ok)

    def cell(self, source: str, target: str) -> str:
        """``ok``, the failed kinds (``dns,eph``), or ``?`` when nothing could be checked."""
        found = self._pairs.get((source, target), [])
        tested = [c for c in found if c.status != "untested"]
        failed = [c.kind for c in tested if not c.ok]
        if failed:
            return ",".join(failed)
        return "ok" if tested and len(tested) == len(found) else "?"

    def rows(self, nodes: Sequence[str] | None = None) -> list[tuple[str, ...]]:
        """Header row (``from \\ to``, the nodes), then one row per source node."""
        shown = self.nodes if nodes is None else tuple(nodes)
        return [("from \\ to", *shown),
                *((source, *(self.cell(source, target) for target in shown))
                  for source in shown)]

    def table(self) -> Table | str:
        """Every node as a table (past TABLE_NODES nodes: only those some check failed
        between, the others counted in its caption); a line instead when those are more than
        a terminal shows. Cells are styled text, never markup: a console that prints node
        text with markup off shows them as they are."""
        from rich.table import Table
        from rich.text import Text

        broken_pairs = [pair for pair, checks in self._pairs.items()
                        if any(not c.ok and c.status != "untested" for c in checks)]
        involved = {node for pair in broken_pairs for node in pair}
        failing = [n for n in self.nodes if n in involved]
        shown = list(self.nodes) if len(self.nodes) <= TABLE_NODES else failing
        if len(shown) > TABLE_NODES:
            broken = sum(not c.ok and c.status != "untested" for c in self.checks)
            return (f"connectivity: {broken} of {len(self.checks)} checks failed, involving "
                    f"{len(failing)} of {len(self.nodes)} nodes (one line each below)")
        header, *body = self.rows(shown)
        others = len(self.nodes) - len(shown)
        table = Table(title="connectivity: rows from, columns to", caption=(
            f"{others} other nodes: every check between them passed" if others else None))
        for name in header:
            table.add_column(name)
        for source, *cells in body:
            table.add_row(Text(source), *(Text(c, style="green" if c == "ok" else "red")
                                          for c in cells))
        return table

    def to_json(self) -> dict[str, Any]:
        """The matrix as data: apply's and verify's proofs, run's preflight."""
        return {"ok": self.ok, "nodes": list(self.nodes),
                "checks": [dataclasses.asdict(check) for check in self.checks],
                "errors": list(self.errors), "problems": self.problems(),
                "cells": {source: {target: self.cell(source, target) for target in self.nodes}
                          for source in self.nodes},
                "duration_s": self.duration_s}

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
            return (check.kind, source, target) in self._reached

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
