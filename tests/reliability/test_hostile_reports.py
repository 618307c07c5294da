"""Reports that made `nodeprov report` quadratic or crash (issue #34): the page grows with
what was read, its N x N grids drawn only up to a bound, and a number the charts cannot hold
is one line, exit 2."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from nodeprov.cli import app
from tests.htmlreport.reports import recorded

NODES = [f"n{index:04d}" for index in range(400)]


def draw(tmp_path: Path, report: dict[str, object]) -> tuple[int, int]:
    """The JSON's size and the page's, drawn by `nodeprov report`."""
    source, page = tmp_path / "report.json", tmp_path / "report.html"
    source.write_text(json.dumps(report))
    result = CliRunner().invoke(app, ["report", str(source), "--html", str(page)])
    assert result.exit_code == 0, result.output
    return source.stat().st_size, page.stat().st_size


def test_a_long_matrix_node_list_no_longer_makes_the_page_quadratic(tmp_path: Path) -> None:
    """Each node of the list without a check was a grey cell of the grid: 400 names (3 KB)
    made 160,000 cells, a 40 MB page."""
    report = recorded("apply-3")
    report["proofs"][0]["connectivity"]["nodes"] = NODES
    read, page = draw(tmp_path, report)
    assert page < 10 * read + 200_000, (read, page)


def test_many_nodes_each_of_its_own_item_do_not_make_the_drift_grid_quadratic(
        tmp_path: Path) -> None:
    report = recorded("verify-3")
    template = report["checks"][0]
    report["checks"] = [{**template, "node": name, "area": f"item{index}"}
                        for index, name in enumerate(NODES)]
    read, page = draw(tmp_path, report)
    assert page < 10 * read + 200_000, (read, page)


def test_a_duration_of_1e308_is_one_line_exit_2(tmp_path: Path) -> None:
    """The schema allows any number; the timeline's arithmetic raised OverflowError."""
    report = recorded("apply-3")
    report["hosts"]["node1"]["tasks"][0]["duration"] = 1e308
    source = tmp_path / "report.json"
    source.write_text(json.dumps(report))
    result = CliRunner().invoke(app, ["report", str(source), "--html", str(tmp_path / "p.html")])
    assert result.exit_code == 2, result.output
    assert result.stderr == (f"nodeprov: {source}: not a nodeprov JSON report: the number "
                             "1e+308 is beyond 2**53, more than any value nodeprov reads; give "
                             "the file --json wrote\n")
    assert not (tmp_path / "p.html").exists()
