"""The matrix grid: a cell for each pair that is not ok, its hover text the check, the cause
and the fix; one square under the ok ones."""

from __future__ import annotations

from nodeprov.htmlreport.grid import matrix_grid
from tests.htmlreport.reports import big_verify, names, recorded


def test_each_failed_pair_is_a_cell_with_check_cause_and_fix() -> None:
    grid = matrix_grid(recorded("verify-3-drift")["proofs"][0]["connectivity"])
    assert [(c.source, c.target, c.state, c.kinds) for c in grid.cells] == [
        ("node1", "node2", "failed", "dns"), ("node1", "node3", "failed", "rdzv"),
        ("node2", "node3", "failed", "rdzv")]
    assert grid.cells[1].title == (
        "node1 -> node3: rdzv\n"
        "check: rdzv 10.237.204.4:29500: timeout\n"
        "cause: TCP to 10.237.204.4:29500 (rendezvous port) timed out: firewall on node3 "
        "blocks the node subnet\n"
        "fix: nodeprov apply --limit node3 --tags firewall")
    assert grid.cells[0].title.splitlines()[1] == (
        "check: dns 'node2': unresolved (Temporary failure in name resolution)")
    assert (grid.failed, grid.checks, grid.cell_size) == (3, 27, 24)


def test_an_untested_pair_is_grey_and_says_so() -> None:
    matrix = recorded("verify-3")["proofs"][0]["connectivity"]
    matrix["cells"]["node2"]["node1"] = "?"
    for check in matrix["checks"]:
        if (check["source"], check["target"]) == ("node2", "node1") and check["kind"] == "eph":
            check["status"] = "untested"
    (cell,) = matrix_grid(matrix).cells
    assert (cell.state, cell.title.splitlines()[0]) == ("untested", "node2 -> node1: not tested")
    assert "check: eph " in cell.title and "untested" in cell.title


def test_problem_lines_that_do_not_match_the_checks_are_left_out() -> None:
    matrix = recorded("verify-3-drift")["proofs"][0]["connectivity"]
    matrix["problems"] = matrix["problems"][1:]  # a report edited by hand: one line short
    assert all("cause:" not in cell.title and "check:" in cell.title
               for cell in matrix_grid(matrix).cells)


def test_128_nodes_get_small_cells_and_only_the_broken_pairs_an_element() -> None:
    grid = matrix_grid(big_verify(128)["proofs"][0]["connectivity"])
    assert grid.nodes == tuple(names(128))
    assert grid.cell_size == 6 and grid.side < 900
    assert len(grid.cells) == grid.failed == 128  # a column of 127, one dns pair
