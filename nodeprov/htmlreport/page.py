"""The page: a JSON report in, one self-contained HTML file out (inline CSS and SVG, no script,
nothing fetched), rendered by Jinja2's sandbox with every value escaped, since hostnames and
error tails come from the nodes::

    html = render_html(report)           # InputError first if report breaks the schema
"""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from jinja2 import PackageLoader, StrictUndefined
from jinja2.sandbox import ImmutableSandboxedEnvironment
from markupsafe import Markup

from nodeprov.errors import InputError
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
    """apply's and verify's proofs, one a verification job."""
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


def _header(report: Mapping[str, Any]) -> list[str]:
    """The lines under the title every report has: the verdict the command printed last
    (reports written before they held one: none), then what ran, where and when."""
    lines = [report["verdict"]] if "verdict" in report else []
    if "started" in report:  # older reports do not say
        script = f": {shlex.join(report['script'])}" if report.get("script") else ""
        lines.append(f"on {report['inventory']} at {report['started']}{script}")
    return lines


def _hosts_line(report: Mapping[str, Any], what: str) -> str:
    hosts = Counter(host["status"] for host in report["hosts"].values())
    return (f"{what}{sum(hosts.values())} hosts: "
            + ", ".join(f"{count} {status}" for status, count in sorted(hosts.items())))


@dataclass(frozen=True)
class View:
    """What the page shows of one kind of report under its header: ``summary`` lines, its
    ``section`` template with what that draws, and its proofs."""

    section: str
    summary: Sequence[str] = ()
    proofs: Sequence[ProofView] = ()
    drift: DriftTable | None = None
    ranks: Sequence[tuple[int, str, Mapping[str, Any]]] = ()
    timeline: Any = None  # apply's tasks over time (timeline.timeline), when it ran any
    task_columns: bool = False  # apply: each host's tasks counted by status
    facts: bool = False  # facts: each host's facts


def _apply_view(report: Mapping[str, Any]) -> View:
    ran = any(host.get("tasks") for host in report["hosts"].values())
    return View("hosts.html", [_hosts_line(report, "tasks on "),
                               *(["check mode: nothing was changed"] if report.get("check")
                                 else [])],
                _proofs(report), timeline=timeline(report["hosts"]) if ran else None,
                task_columns=True)


def _facts_view(report: Mapping[str, Any]) -> View:
    return View("hosts.html", [_hosts_line(report, "")], facts=True)


def _verify_view(report: Mapping[str, Any]) -> View:
    return View("drift.html",
                [f"{len(report['checks'])} checks, {len(report['drift'])} drifted"],
                _proofs(report), drift=drift_table(report["checks"]))


def _run_view(report: Mapping[str, Any]) -> View:
    preflight = report["preflight"]
    return View("run.html", proofs=[] if preflight is None else [
        ProofView(1, "Preflight", matrix_grid(preflight), ok=preflight["ok"])],
                ranks=_ranks(report))


VIEWS: Mapping[str, Callable[[Mapping[str, Any]], View]] = {
    "apply": _apply_view, "facts": _facts_view, "verify": _verify_view, "run": _run_view}


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
    InputError that a report breaking the schema, or of a kind with no page, raises."""
    check_report(report, source)
    viewed = VIEWS.get(report["command"])
    if viewed is None:
        raise InputError(f"a {report['command']} report has no HTML page (pages are drawn for "
                         f"{', '.join(VIEWS)})", source=source)
    environment = ImmutableSandboxedEnvironment(
        loader=PackageLoader("nodeprov.htmlreport", "templates"), autoescape=True,
        undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, finalize=_shown)
    return environment.get_template("report.html").render(
        report=report, header=_header(report), view=viewed(report),
        max_grid_nodes=MAX_GRID_NODES)
