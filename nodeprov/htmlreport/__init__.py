"""The HTML report: a JSON report (``nodeprov.jsonreport``) in, one self-contained HTML page
out, that a browser opens from disk with no network. It shows the all-reduce sweep as a chart
with the baseline's curve, the connectivity matrix as a grid whose broken cells say the check,
the cause and the fix on hover, each node's tasks on a timeline, verify's drift by node and item
with its repair, and run's nodes with their exit codes, durations and logs::

    report = read_report(Path("apply.json"))       # checked against report.schema.json
    Path("apply.html").write_text(render_html(report), encoding="utf-8")

A rendering layer: it imports the report's schema and nodeprov's errors, nothing that connects
or decides. The modules: ``source`` (read and check), ``page`` (the page, Jinja2's sandbox with
autoescape: what a node says is text), ``sweep``, ``grid``, ``timeline`` (what each chart
shows, in pixels), ``scale`` (the axes' arithmetic); the templates are in ``templates/``.
"""

from nodeprov.htmlreport.page import render_html
from nodeprov.htmlreport.source import check_report, read_report

__all__ = ["check_report", "read_report", "render_html"]
