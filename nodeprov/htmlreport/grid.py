"""The connectivity matrix as an N x N grid (``matrix.svg`` draws it): rows from, columns to,
one green square under all the cells, and a square of its own for each cell that is not ok,
whose hover text says the check, the cause and the fix::

    grid = matrix_grid(proof["connectivity"])
    grid.cells[0].title
    # 'node1 -> node3: rdzv\\ncheck: rdzv 10.0.0.13:29500: timeout\\ncause: ...\\nfix: ...'

A cell drawn for each ok pair would make a 128-node report 16384 elements larger; the one
square under them all keeps it small, and only the broken pairs need words. A pair the
report does not mention is drawn as untested, so the grid grows as the square of the node
list, not of what was read: it is drawn for MAX_GRID_NODES at most (issue #34: a 30 KB report
naming thousands of nodes made a 27.6 MB page, then MemoryError).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

GRID_PIXELS = 640  # the grid's side when the nodes are many; cells are 6 to 24 pixels
CHAR_WIDTH = 0.62  # of the font size: room for the longest node name as a label
# Past this, cells are under 5 pixels and the page megabytes: the problem lines say it all
MAX_GRID_NODES = 128


@dataclass(frozen=True)
class Cell:
    row: int
    column: int
    source: str
    target: str
    state: str  # failed, untested
    kinds: str  # the matrix's cell: the failed kinds (dns,eph) or ?
    title: str


@dataclass(frozen=True)
class MatrixGrid:
    nodes: tuple[str, ...]
    cells: tuple[Cell, ...]
    cell_size: int
    label_room: float  # pixels left of and above the grid for the node names
    font_size: float
    errors: tuple[str, ...]
    problems: tuple[str, ...]
    checks: int
    failed: int  # pairs with a failed check
    drawn: bool  # False: more than MAX_GRID_NODES nodes, no grid

    @property
    def side(self) -> float:
        return self.label_room + self.cell_size * len(self.nodes) + 4


def split_fix(line: str) -> tuple[str, str]:
    """A problem line's cause and fix: the fix is the parenthesis it ends with.

    >>> split_fix("n1 -> n3: TCP timed out: firewall on n3 (nodeprov apply --limit n3)")
    ('n1 -> n3: TCP timed out: firewall on n3', 'nodeprov apply --limit n3')
    >>> split_fix("n1 -> n3: TCP to a:1 failed: refused (check the link)")[1]
    'check the link'
    >>> split_fix("no parenthesis")
    ('no parenthesis', '')
    """
    if not line.endswith(")"):
        return line, ""
    depth = 0
    for index in range(len(line) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(line[index], 0)
        if depth == 0:
            return line[:index].rstrip(), line[index + 1:-1]
    return line, ""


def _explained(matrix: Mapping[str, Any]) -> dict[tuple[str, str], list[str]]:
    """Each broken check's problem line by its pair: ``problems`` lists the node errors, then
    one line per failed check in the order of ``checks`` (the schema says so)."""
    failed = [c for c in matrix["checks"] if c["status"] not in ("ok", "untested")]
    lines = matrix["problems"][len(matrix["errors"]):]
    found: dict[tuple[str, str], list[str]] = {}
    if len(lines) != len(failed):  # a report from elsewhere: the checks' own words only
        return found
    for check, line in zip(failed, lines, strict=True):
        pair = (check["source"], check["target"])
        if line.startswith(f"{pair[0]} -> {pair[1]}:"):
            found.setdefault(pair, []).append(line)
    return found


def _title(source: str, target: str, kinds: str, checks: Sequence[Mapping[str, Any]],
           lines: Sequence[str]) -> str:
    said = [f"{source} -> {target}: {'not tested' if kinds == '?' else kinds}"]
    for check in checks:
        if check["status"] != "ok":
            observed = f" ({check['observed']})" if check["observed"] else ""
            said.append(f"check: {check['kind']} {check['detail']}: {check['status']}{observed}")
    for line in lines:
        cause, fix = split_fix(line.removeprefix(f"{source} -> {target}: "))
        said += [f"cause: {cause}"] + ([f"fix: {fix}"] if fix else [])
    return "\n".join(said)


def matrix_grid(matrix: Mapping[str, Any]) -> MatrixGrid:
    """The grid of a matrix of the JSON report (a proof's ``connectivity``, run's
    ``preflight``)."""
    nodes = tuple(matrix["nodes"])
    size = max(6, min(24, GRID_PIXELS // max(len(nodes), 1)))
    font = min(12.0, size * 0.85)
    by_pair: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for check in matrix["checks"]:
        by_pair.setdefault((check["source"], check["target"]), []).append(check)
    explained = _explained(matrix)
    drawn = len(nodes) <= MAX_GRID_NODES
    cells = []
    for row, source in enumerate(nodes if drawn else ()):
        for column, target in enumerate(nodes):
            kinds = matrix["cells"].get(source, {}).get(target, "?")
            if kinds != "ok":
                pair = (source, target)
                cells.append(Cell(row, column, source, target,
                                  "untested" if kinds == "?" else "failed", kinds,
                                  _title(source, target, kinds, by_pair.get(pair, []),
                                         explained.get(pair, []))))
    known = set(nodes)
    failed = sum(source in known and target in known and kinds not in ("ok", "?")
                 for source, row_cells in matrix["cells"].items()
                 for target, kinds in row_cells.items())
    longest = max((len(node) for node in nodes), default=1)
    return MatrixGrid(nodes, tuple(cells), size, round(longest * font * CHAR_WIDTH + 8, 1),
                      font, tuple(matrix["errors"]), tuple(matrix["problems"]),
                      len(matrix["checks"]), failed, drawn)
