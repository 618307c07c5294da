"""The HTML report is a rendering layer: a JSON report in, HTML out; it imports no command,
job or SSH code (human_bytes's module, job.results, imports only the standard library)."""

from __future__ import annotations

from tests.test_layering import allowed, imported, modules

MAY_IMPORT = ("nodeprov.htmlreport", "nodeprov.errors", "nodeprov.jsonreport",
              "nodeprov.job.results")


def test_the_html_report_imports_only_the_report_and_its_errors() -> None:
    rooms = {name: tree for name, tree in modules() if allowed(name, ("nodeprov.htmlreport",))}
    assert len(rooms) >= 6
    wrong = {f"{name} imports {target}" for name, tree in rooms.items()
             for target in imported(name, tree) if not allowed(target, MAY_IMPORT)}
    assert not wrong, sorted(wrong)
