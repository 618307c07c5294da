"""``nodeprov facts``: what nodeprov reads from each node, one SSH round trip per node, as a
table (and the JSON report)::

    code = run_facts(FactsRequest(inventory=[Path("inventory.yaml")], forks=32), Redactor())
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from nodeprov import jsonreport
from nodeprov.commands.header import Header
from nodeprov.commands.opening import open_for
from nodeprov.commands.requests import FactsRequest
from nodeprov.commands.verdict import Part, passed, print_verdict, verdict
from nodeprov.errors import EXIT_HOST_FAILED, EXIT_OK
from nodeprov.inventory.extravars import parse_extra_vars
from nodeprov.remote.connect import connect_all
from nodeprov.remote.facts import Facts
from nodeprov.remote.options import SshOptions
from nodeprov.util.redact import Redactor
from nodeprov.util.validate import printable


def run_facts(request: FactsRequest, redactor: Redactor) -> int:
    from nodeprov.remote.hostkeys import SshFiles  # lazy: Fabric is slow to import

    json_path = request.json_path
    opened = open_for(request.inventory, request.ansible, redactor,
                      extra=parse_extra_vars(request.extra_vars))
    inventory = opened.inventory
    hosts = inventory.limited(request.limit)
    header = Header.now("facts", inventory.path)
    sessions, facts, errors = connect_all(
        hosts, SshOptions(accept_new_host_keys=request.accept_new_host_keys),
        opened.forks(request.forks), SshFiles(inventory.ssh_configs))
    for session in sessions.values():
        session.close()
    report = {**facts_report([host.name for host in hosts], facts, errors,
                             reached={name for name, session in sessions.items()
                                      if session.connections}), **header.fields()}
    if json_path:
        jsonreport.write_report(redactor.walk(report), json_path)
    if json_path != "-":
        console = Console(highlight=False)
        console.print(header.line(), markup=False, soft_wrap=True)
        table = Table("host", "fact", "value")
        for name, entry in report["hosts"].items():
            rows = list(entry["facts"].items()) if entry["facts"] else [("error", entry["error"])]
            for index, (key, value) in enumerate(rows):
                table.add_row(name if index == 0 else "", key, Text(printable(value)),
                              end_section=index == len(rows) - 1)
        console.print(table)
        print_verdict(console, report["verdict"])
    return EXIT_OK if report["ok"] else EXIT_HOST_FAILED


def facts_report(names: Sequence[str], facts: Mapping[str, Facts], errors: Mapping[str, str],
                 reached: Collection[str] = ()) -> dict[str, Any]:
    """``nodeprov facts``: each host's facts (the one-line-per-fact summary), or its error; a
    host ``reached`` whose facts were refused (a value out of pattern) failed, others were
    unreachable."""
    def status(name: str) -> str:
        return "ok" if name in facts else "failed" if name in reached else "unreachable"

    hosts = {name: {"status": status(name),
                    "error": errors.get(name),
                    "facts": facts[name].summary() if name in facts else None,
                    **({"fabric": facts[name].rdma.as_json()} if name in facts else {})}
             for name in names}
    missing = [name for name in names if name not in facts]
    line = verdict([Part(f"{len(missing)} of {len(names)} hosts: no facts: {', '.join(missing)}",
                         False) if missing else Part(f"facts of {len(names)} hosts read")])
    return jsonreport.document("facts", passed(line), verdict=line, hosts=hosts)
