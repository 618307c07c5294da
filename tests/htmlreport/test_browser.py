"""The HTML reports of 3 nodes (recorded) and 128 nodes (generated), opened in headless
Chromium: every node, every failed pair and every point of the curve are in the DOM the browser
built, nothing logs to the console or is fetched, a screenshot is taken, a node's hostile text
stays text. NODEPROV_HTML_SCREENSHOTS=DIR keeps the screenshots there."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from nodeprov.htmlreport.page import render_html
from tests.htmlreport.browser import CHROMIUM, Seen, open_page, png_size, take_screenshot
from tests.htmlreport.dom import Dom
from tests.htmlreport.reports import HOSTILE, big_apply, big_verify, hostile, recorded

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="headless Chromium is missing: scripts/setup.sh installs Debian's "
    "chromium package (apt-get install chromium)")

REPORTS: dict[str, Callable[[], dict[str, Any]]] = {
    "apply-3": lambda: recorded("apply-3"), "apply-3-again": lambda: recorded("apply-3-again"),
    "verify-3-drift": lambda: recorded("verify-3-drift"),
    "verify-3": lambda: recorded("verify-3"), "run-3-fail": lambda: recorded("run-3-fail"),
    "facts-3": lambda: recorded("facts-3"),
    "apply-128": lambda: big_apply(128), "verify-128": lambda: big_verify(128),
    "hostile": hostile}
MB = 1_000_000


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, tuple[dict[str, Any],
                                                                           Path, Seen]]]:
    """Each report, its HTML file, and what Chromium made of it (one browser start each)."""
    folder = tmp_path_factory.mktemp("html")
    opened = {}
    for name, make in REPORTS.items():
        report = make()
        page = folder / f"{name}.html"
        page.write_text(render_html(report), encoding="utf-8")
        opened[name] = (report, page, open_page(page, folder / "profile"))
    yield opened


def proofs(report: dict[str, Any]) -> list[dict[str, Any]]:
    return list(report.get("proofs", []))


@pytest.mark.parametrize("name", list(REPORTS))
def test_nothing_reaches_the_console_or_the_network(name: str, pages: Any) -> None:
    assert pages[name][2].console == []


def test_the_console_check_sees_what_a_page_logs(tmp_path: Path) -> None:
    page = tmp_path / "logs.html"
    page.write_text('<!DOCTYPE html><meta http-equiv="Content-Security-Policy" content='
                    '"default-src \'none\'"><img src="http://example.invalid/x.png">'
                    "<p>a page that tries to fetch</p>")
    assert any("Content Security Policy" in line for line in open_page(page, tmp_path).console)


@pytest.mark.parametrize("name", ["apply-3", "verify-3-drift", "run-3-fail", "facts-3",
                                  "apply-128", "verify-128"])
def test_every_node_is_on_the_page(name: str, pages: Any) -> None:
    report, _, seen = pages[name]
    dom = Dom.of(seen.dom)
    nodes = set(report.get("hosts") or report.get("nodes") or {
        check["node"] for check in report["checks"] if check["node"]})
    assert {row.attrs["data-node"] for row in dom.find("tr") if "data-node" in row.attrs} \
        >= nodes
    for proof in proofs(report):
        matrix = proof["connectivity"]
        assert [e.attrs["data-node"] for e in dom.find("text", "node from")] == matrix["nodes"]
    if report["command"] == "apply":
        assert [row.attrs["data-node"] for row in dom.find("g", "row")] == list(report["hosts"])


@pytest.mark.parametrize("name", ["verify-3-drift", "verify-128", "apply-3"])
def test_every_failed_pair_is_a_red_cell_saying_check_cause_and_fix(name: str,
                                                                    pages: Any) -> None:
    report, _, seen = pages[name]
    failed = {(c["source"], c["target"]) for proof in proofs(report)
              for c in proof["connectivity"]["checks"] if c["status"] not in ("ok", "untested")}
    cells = Dom.of(seen.dom).find("rect", "cell failed")
    assert {(cell.attrs["data-source"], cell.attrs["data-target"]) for cell in cells} == failed
    assert len(cells) == len(failed)
    for cell in cells:
        assert "check: " in cell.title and "cause: " in cell.title, cell.title
        assert "fix: nodeprov apply --limit" in cell.title, cell.title


@pytest.mark.parametrize("name", ["apply-3", "apply-3-again", "verify-3", "apply-128"])
def test_the_curve_has_every_point_of_the_sweep(name: str, pages: Any) -> None:
    report, _, seen = pages[name]
    dom = Dom.of(seen.dom)
    (proof,) = proofs(report)
    rows = proof["job"]["result"]["sizes"]
    for series, field in (("busbw", "busbw_bytes_per_s"), ("algbw", "algbw_bytes_per_s")):
        points = [p for p in dom.find("circle", "point") if p.attrs["data-series"] == series]
        assert [int(p.attrs["data-bytes"]) for p in points] == [row["bytes"] for row in rows]
        assert [float(p.attrs["data-bytes-per-s"]) for p in points] == [row[field]
                                                                         for row in rows]
        # higher bandwidth is higher up; a larger message further right
        by_value = sorted(points, key=lambda p: float(p.attrs["data-bytes-per-s"]))
        assert [float(p.attrs["cy"]) for p in by_value] == sorted(
            (float(p.attrs["cy"]) for p in points), reverse=True)
        assert [float(p.attrs["cx"]) for p in points] == sorted(float(p.attrs["cx"])
                                                                 for p in points)
    baseline = list(dom.find("circle", "point baseline"))
    assert [int(p.attrs["data-bytes"]) for p in baseline] == [
        row["bytes"] for row in proof["baseline"]["sizes"]]


def test_a_128_node_report_is_one_file_under_1_MB(pages: Any) -> None:
    for name in ("apply-128", "verify-128"):
        size = pages[name][1].stat().st_size
        print(f"{name}: {size} bytes")
        assert size < MB, f"{name}: {size} bytes"
    dom = Dom.of(pages["apply-128"][2].dom)
    assert not {"script", "link", "img", "iframe", "object"} & dom.tags()


def test_a_nodes_hostile_text_stays_text(pages: Any) -> None:
    report, _, seen = pages["hostile"]
    dom = Dom.of(seen.dom)
    assert not {"script", "img"} & dom.tags()
    assert not [e for e in dom.elements if any(a.startswith("on") for a in e.attrs)]
    assert HOSTILE in [text for row in dom.find("tr") for text in row.text] or [
        cell for cell in dom.find("td") if "".join(cell.text) == HOSTILE]
    assert [row for row in dom.find("g", "row") if row.attrs["data-node"] == "node2" + HOSTILE]
    assert [bar for bar in dom.find("rect", "task failed") if HOSTILE in bar.title]
    (cell,) = dom.find("rect", "cell failed")
    assert f"check: dns 'node3': unresolved ({HOSTILE})" in cell.title


@pytest.mark.parametrize("name", ["apply-3", "verify-3-drift", "run-3-fail", "apply-128",
                                  "verify-128"])
def test_a_screenshot_is_taken(name: str, pages: Any, tmp_path: Path) -> None:
    png = tmp_path / f"{name}.png"
    height = 3000 if "128" in name else 1800
    assert take_screenshot(pages[name][1], png, tmp_path / "profile", height=height) == []
    assert png_size(png) == (1280, height)
    keep = os.environ.get("NODEPROV_HTML_SCREENSHOTS")
    if keep:
        shutil.copy(png, Path(keep) / png.name)
