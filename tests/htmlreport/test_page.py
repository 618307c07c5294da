"""The page: self-contained, escaped, one section per thing the report holds."""

from __future__ import annotations

import re

import pytest

from nodeprov.errors import InputError
from nodeprov.htmlreport.page import render_html
from tests.htmlreport.dom import Dom
from tests.htmlreport.reports import HOSTILE, hostile, recorded

ALL = ["apply-3", "verify-3", "verify-3-drift", "run-3", "run-3-fail", "facts-3"]


@pytest.mark.parametrize("name", ALL)
def test_the_page_fetches_nothing_and_runs_nothing(name: str) -> None:
    html = render_html(recorded(name))
    dom = Dom.of(html)
    assert not {"script", "link", "img", "iframe", "object", "embed"} & dom.tags()
    (policy,) = [m for m in dom.find("meta") if m.attrs.get("http-equiv")]
    assert policy.attrs["content"] == "default-src 'none'; style-src 'unsafe-inline'"
    assert set(re.findall(r"https?://[^\s\"'<>]+", html)) <= {"http://www.w3.org/2000/svg"}


def test_a_nodes_hostile_text_is_escaped() -> None:
    html = render_html(hostile())
    dom = Dom.of(html)
    assert not {"script", "img"} & dom.tags()
    assert not [e for e in dom.elements if any(a.startswith("on") for a in e.attrs)]
    assert HOSTILE not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&lt;/svg&gt;" in html


def test_a_nodes_control_and_bidirectional_characters_are_shown_as_escapes() -> None:
    # HTML escaping leaves them: U+202E reversed the rest of node1's error line in the browser
    report = hostile()
    said = "ufw: \u202edetavitca\x1b[2J\x00 done"
    report["hosts"]["node1"]["error"] = f"node1: firewall: 'ufw enable' exited 1: {said}"
    html = render_html(report)
    assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\u202a-\u202e\u2066-\u2069]", html)
    assert "exited 1: ufw: \\u202edetavitca\\x1b[2J\\x00 done" in html
    assert "<svg" in html and "&lt;svg" not in html  # the page's own markup stays markup


def test_a_report_breaking_the_schema_draws_nothing() -> None:
    report = recorded("apply-3")
    report["hosts"]["node1"]["status"] = "fine"
    with pytest.raises(InputError, match=r"^apply.json: hosts/node1/status: "):
        render_html(report, "apply.json")


def test_run_shows_each_nodes_exit_code_duration_and_log() -> None:
    report = recorded("run-3-fail")
    dom = Dom.of(render_html(report))
    rows = {row.attrs["data-node"] for row in dom.find("tr") if "data-node" in row.attrs}
    assert rows == set(report["nodes"])
    text = "".join(t for e in dom.elements for t in e.text)
    for node in report["nodes"].values():
        assert node["log"] in text
        assert f"{node['duration_s']:.1f} s" in text
    assert [cell for cell in dom.find("td", "failed") if cell.text == ["1"]]  # node2's exit
    assert "ValueError: rank 3 fails on purpose at step 2" in text


def test_run_shows_each_ranks_own_exit_code_duration_and_log() -> None:
    # run-3-fail was recorded before the report had each rank's end: these are written in, as
    # nodeprov run now reports them (rank 3 raised; the others were stopped by SIGTERM)
    report = recorded("run-3-fail")
    for name, ranks in (("node1", (0, 1)), ("node2", (2, 3)), ("node3", (4, 5))):
        report["nodes"][name]["ranks"] = {str(rank): {
            "exit_code": 1 if rank == 3 else -15, "duration_s": 30.0 + rank}
            for rank in ranks}
    dom = Dom.of(render_html(report))
    rows = [row for row in dom.find("tr") if "data-rank" in row.attrs]
    assert [row.attrs["data-rank"] for row in rows] == ["0", "1", "2", "3", "4", "5"]
    text = "".join(t for e in dom.elements for t in e.text)
    assert "33.0 s" in text and report["nodes"]["node2"]["log"] in text
    assert [cell.text for cell in dom.find("td", "failed")].count(["1"]) == 2  # node2, rank 3
    assert len([cell for cell in dom.find("td", "stopped") if cell.text == ["-15"]]) == 5


def test_verify_shows_drift_by_node_and_item_with_the_repair() -> None:
    dom = Dom.of(render_html(recorded("verify-3-drift")))
    codes = ["".join(code.text) for code in dom.find("code")]
    assert "nodeprov apply /srv/html-tb/inventory.yaml --limit node3 --tags firewall" in codes
    grid = [row for row in dom.find("tr") if row.attrs.get("data-node") == "node1"]
    assert grid
    failed = list(dom.find("td", "failed"))
    assert len(failed) == 4  # node1 hosts, node3 firewall: in the grid and the drift table


def test_the_footer_names_the_nodeprov_that_wrote_the_report_where_it_says() -> None:
    report = recorded("apply-3")
    report["nodeprov_version"] = "9.8.7"
    assert "by nodeprov 9.8.7." in render_html(report)
    del report["nodeprov_version"]  # written before reports carried it
    assert "by nodeprov." in render_html(report)
