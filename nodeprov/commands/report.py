"""``nodeprov report REPORT.json --html PATH``: the HTML page of a saved JSON report; and the
one place every command writes its reports (``--json``, ``--html``)::

    write_reports(document, json_path="-", html_path="apply.html")
    code = run_report(Path("apply.json"), "apply.html")

The page is drawn from the JSON report alone, checked against the schema first
(``nodeprov.htmlreport``), so ``--html`` now and ``nodeprov report`` later give the same page.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nodeprov import jsonreport
from nodeprov.errors import EXIT_OK, InputError
from nodeprov.util import reportfile
from nodeprov.util.validate import printable


def write_html(report: Mapping[str, Any], html_path: str, source: str = "the report") -> int:
    """The page of ``report`` at ``html_path`` (``-``: stdout, as for ``--json``); its size in
    bytes."""
    from nodeprov.htmlreport import render_html  # lazily: Jinja2 and the schema check

    page = render_html(report, source)
    if html_path == reportfile.STDOUT:
        sys.stdout.write(page)
    else:
        reportfile.write_private(html_path, page)  # its path was checked as the CLI read it
    return len(page.encode("utf-8"))


def write_reports(report: Mapping[str, Any], json_path: str | None,
                  html_path: str | None) -> None:
    """The JSON report (``-``: stdout) and the HTML page, each where asked."""
    if json_path:
        jsonreport.write_report(report, json_path)
    if html_path:
        write_html(report, html_path)


def run_report(report_path: Path, html_path: str | None) -> int:
    from nodeprov.htmlreport import read_report

    if not html_path:
        raise InputError("nothing to write: give --html PATH for the HTML page")
    report = read_report(report_path)
    if report["command"] == "fabric":  # its lines and JSON say it all; no page is drawn yet
        raise InputError("a fabric report has no HTML page: nodeprov fabric prints it, and "
                         "--json keeps it", source=str(report_path))
    size = write_html(report, html_path, str(report_path))
    # exit 0: the page is written; what the report found is its verdict, said, not exited with
    said = report.get("verdict") or ("ok" if report["ok"] else "FAILED")
    print(printable(f"{html_path}: {size / 1000:.0f} kB, from {report_path}; the report's "
                    f"verdict: {said}"),
          file=sys.stderr if html_path == reportfile.STDOUT else sys.stdout)
    return EXIT_OK
