"""``--html`` on apply, verify and run, and ``nodeprov report``: the page is drawn from the JSON
report alone (the same bytes from --html now and from the saved JSON later); what is no report
is exit 2 and one line. The nodes are loopback addresses nobody listens on: no cluster needed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nodeprov.cli import app
from nodeprov.htmlreport import render_html
from tests.htmlreport.dom import Dom
from tests.htmlreport.reports import DATA, recorded


@pytest.mark.parametrize("name", sorted(path.stem for path in DATA.glob("*.json")))
def test_report_draws_a_saved_json_report(name: str, tmp_path: Path) -> None:
    page = tmp_path / f"{name}.html"
    done = CliRunner().invoke(app, ["report", str(DATA / f"{name}.json"), "--html", str(page)])
    assert done.exit_code == 0, done.output
    assert page.read_text() == render_html(recorded(name))
    report = recorded(name)
    said = report.get("verdict") or ("ok" if report["ok"] else "FAILED")
    assert done.stdout == (f"{page}: {page.stat().st_size / 1000:.0f} kB, from {DATA}/{name}.json; "
                           f"the report's verdict: {said}\n")


@pytest.mark.parametrize(("text", "said"), [
    ("not json", "report.json:1: not JSON: Expecting value (column 1)"),
    ('{"schema_version": 1, "command": "apply", "ok": true}', "report.json: (top): must contain"),
    # hand-edited, each a traceback before: OverflowError drawing the chart, KeyError 'hosts'
    ('{"schema_version": 1, "command": "facts", "ok": true, "hosts": {}, "t": Infinity}',
     "report.json: not a nodeprov JSON report: Infinity is no JSON number"),
    ('{"schema_version": 1, "command": "", "ok": true}', "report.json: command: must be one of"),
])
def test_what_is_no_report_is_exit_2_and_one_line_and_no_page(tmp_path: Path, text: str,
                                                              said: str) -> None:
    (tmp_path / "report.json").write_text(text)
    done = CliRunner().invoke(app, ["report", str(tmp_path / "report.json"), "--html",
                                    str(tmp_path / "page.html")])
    assert done.exit_code == 2
    assert done.stderr.startswith(f"nodeprov: {tmp_path}/{said}"), done.stderr
    assert len(done.stderr.splitlines()) == 1 and not (tmp_path / "page.html").exists()


def test_report_without_html_or_with_an_unwritable_path_is_exit_2(tmp_path: Path) -> None:
    saved = str(DATA / "run-3.json")
    done = CliRunner().invoke(app, ["report", saved])
    assert (done.exit_code, done.stderr) == (
        2, "nodeprov: nothing to write: give --html PATH for the HTML page\n")
    done = CliRunner().invoke(app, ["report", saved, "--html", str(tmp_path / "no" / "p.html")])
    assert done.exit_code == 2
    assert f"--html: cannot write {tmp_path}/no/p.html: No such file or directory" in done.stderr


@pytest.mark.parametrize("command", ["apply", "verify"])
def test_html_is_the_json_reports_page(command: str, unreachable: tuple[Path, Path],
                                       tmp_path: Path) -> None:
    inventory, playbook = unreachable
    report, page = tmp_path / "report.json", tmp_path / "report.html"
    done = CliRunner().invoke(app, [command, str(inventory), "-p", str(playbook), "--json",
                                    str(report), "--html", str(page)])
    assert done.exit_code == 1, done.output
    assert page.read_text() == render_html(json.loads(report.read_text()))
    nodes = {row.attrs["data-node"] for row in Dom.of(page.read_text()).find("tr")
             if "data-node" in row.attrs}
    assert {"node1", "node2"} <= nodes


def test_html_alone_writes_the_page(unreachable: tuple[Path, Path], tmp_path: Path) -> None:
    inventory, playbook = unreachable
    page = tmp_path / "apply.html"
    done = CliRunner().invoke(app, ["apply", str(inventory), "-p", str(playbook), "--html",
                                    str(page)])
    assert done.exit_code == 1, done.output
    assert "node1: cannot connect to 127.0.0.1:9" in page.read_text()


