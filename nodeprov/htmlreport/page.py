"""The page: a JSON report in, one self-contained HTML file out (inline CSS and SVG, no script,
nothing fetched), rendered by Jinja2's sandbox with every value escaped, since hostnames and
error tails come from the nodes::

    html = render_html(report)           # InputError first if report breaks the schema
"""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jinja2 import PackageLoader, StrictUndefined
from jinja2.sandbox import ImmutableSandboxedEnvironment
from markupsafe import Markup

from nodeprov.htmlreport.grid import MAX_GRID_NODES, MatrixGrid, matrix_grid
from nodeprov.htmlreport.source import check_report
from nodeprov.htmlreport.sweep import SweepPlot, sweep_plot
from nodeprov.htmlreport.timeline import timeline
from nodeprov.util.validate import printable


@dataclass(frozen=True)
class ProofView:
    """A proof (apply, verify) or run's preflight, as the page shows it."""

    number: int  # tells the page's matrices apart (their SVG ids)
    heading: str
    grid: MatrixGrid
    plot: SweepPlot | None = None
    ok: bool = True
    verdict: str = ""
    failures: Sequence[str] = ()
    pairs: Sequence[Mapping[str, Any]] = field(default_factory=list)
    pairwise: Mapping[str, Any] | None = None  # the rounds and slow nodes; older reports: None


def _proofs(report: Mapping[str, Any]) -> list[ProofView]:
    if report["command"] == "run":
        preflight = report["preflight"]
        return [] if preflight is None else [
            ProofView(1, "Preflight", matrix_grid(preflight), ok=preflight["ok"])]
    proofs = report.get("proofs", [])
    return [ProofView(number, "Proof" if len(proofs) == 1 else f"Proof {number}",
                      matrix_grid(proof["connectivity"]), sweep_plot(proof), proof["ok"],
                      proof["verdict"], proof["failures"], proof["pairs"],
                      proof.get("pairwise"))
            for number, proof in enumerate(proofs, 1)]


@dataclass(frozen=True)
class DriftTable:
    """verify's checks by node (rows) and item (columns): each cell the worst outcome."""

    items: tuple[str, ...]
    rows: dict[str, dict[str, str]]

    @property
    def drawn(self) -> bool:
        """Whether the grid fits MAX_DRIFT_CELLS (nodes times items, each from what was read:
        a check per node, each of another item, would make it quadratic)."""
        return len(self.rows) * len(self.items) <= MAX_DRIFT_CELLS


OUTCOME_ORDER = ("passed", "skipped", "error", "failed")  # a worse outcome wins the cell
MAX_DRIFT_CELLS = 512 * 32  # 512 nodes, 32 items; past it the drifted checks alone are listed


def drift_table(checks: Sequence[Mapping[str, Any]]) -> DriftTable:
    """
    >>> table = drift_table([{"node": "n1", "area": "hosts", "outcome": "passed"},
    ...                      {"node": "n1", "area": "hosts", "outcome": "failed"},
    ...                      {"node": None, "area": None, "outcome": "passed"}])
    >>> table.items, table.rows
    (('hosts',), {'n1': {'hosts': 'failed'}})
    """
    rows: dict[str, dict[str, str]] = {}
    items: dict[str, None] = {}
    for check in checks:
        if check["node"] is None or check["area"] is None:
            continue
        items[check["area"]] = None
        cells = rows.setdefault(check["node"], {})
        cells[check["area"]] = max(cells.get(check["area"], "passed"), check["outcome"],
                                   key=OUTCOME_ORDER.index)
    return DriftTable(tuple(items), rows)


def _summary(report: Mapping[str, Any]) -> list[str]:
    """The lines under the title: the verdict the command printed last (reports written
    before they held one: none), then what happened, in numbers."""
    command = report["command"]
    lines = [report["verdict"]] if "verdict" in report else []
    if "started" in report:  # what ran, where, when (older reports do not say)
        script = f": {shlex.join(report['script'])}" if report.get("script") else ""
        lines.append(f"on {report['inventory']} at {report['started']}{script}")
    if command == "run":
        return lines
    if command == "verify":
        return [*lines, f"{len(report['checks'])} checks, {len(report['drift'])} drifted"]
    hosts = Counter(host["status"] for host in report["hosts"].values())
    lines.append(f"{'tasks on ' if command == 'apply' else ''}{sum(hosts.values())} hosts: "
                 + ", ".join(f"{count} {status}" for status, count in sorted(hosts.items())))
    if report.get("check"):
        lines.append("check mode: nothing was changed")
    return lines


def _ranks(report: Mapping[str, Any]) -> list[tuple[int, str, Mapping[str, Any]]]:
    """A run's ranks in order, each with its node and how it ended (``nodes.*.ranks``)."""
    return sorted(((int(rank), name, end) for name, node in report["nodes"].items()
                   for rank, end in node.get("ranks", {}).items()), key=lambda row: row[0])


def _shown(value: Any) -> Any:
    """Text as the page shows it: a node's control or bidirectional characters (an error's
    output tail) spelled as escapes, which HTML escaping leaves as they are (U+202E reverses
    what follows it in the browser too); the page's own markup as it is."""
    return printable(value) if isinstance(value, str) and not isinstance(value, Markup) else value


def render_html(report: Mapping[str, Any], source: str = "the report") -> str:
    """The HTML page of ``report`` (a JSON report as a dict); ``source`` names it in the
    InputError that a report breaking the schema raises."""
    check_report(report, source)
    environment = ImmutableSandboxedEnvironment(
        loader=PackageLoader("nodeprov.htmlreport", "templates"), autoescape=True,
        undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, finalize=_shown)
    with_tasks = report["command"] == "apply" and any(
        host.get("tasks") for host in report["hosts"].values())
    return environment.get_template("report.html").render(
        report=report, summary=_summary(report), proofs=_proofs(report),
        max_grid_nodes=MAX_GRID_NODES,
        drift=drift_table(report["checks"]) if report["command"] == "verify" else None,
        ranks=_ranks(report) if report["command"] == "run" else [],
        timeline=timeline(report["hosts"]) if with_tasks else None)
