"""``nodeprov fabric LOG...``: which network NCCL took on each node, from logs a user already
has, and why a path is slower than the nodes have (docs/fabric.md)::

    code = run_fabric([Path("train.log")], json_path=None)   # 0, 3 (slower path) or 2
    code = run_fabric(logs, None, facts_path=Path("facts.json"))  # with nodeprov facts --json

Reads the files only; connects to nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nodeprov import jsonreport
from nodeprov.errors import EXIT_OK, EXIT_SLOWER_PATH, InputError
from nodeprov.fabric import read_logs
from nodeprov.fabric.factcauses import with_facts
from nodeprov.fabric.text import fabric_text
from nodeprov.fabric.verdict import FabricReport
from nodeprov.htmlreport.source import read_report


def run_fabric(paths: Sequence[Path], json_path: str | None,
               facts_path: Path | None = None) -> int:
    report = read_logs(paths)
    if facts_path is not None:
        facts = read_report(facts_path)
        if facts["command"] != "facts":
            raise InputError(f"a report of `nodeprov {facts['command']}`; --facts takes "
                             "the file `nodeprov facts --json` wrote", source=str(facts_path),
                             field="command")
        report = with_facts(report, facts["hosts"])
    code = EXIT_SLOWER_PATH if report.verdict == "slower-path" else EXIT_OK
    if json_path:
        jsonreport.write_report(fabric_json(report, ok=code == EXIT_OK), json_path)
    if json_path != "-":
        print("\n".join(fabric_text(report, facts_read=facts_path is not None)))
    return code


def fabric_json(report: FabricReport, ok: bool) -> dict[str, Any]:
    """The ``--json`` report: issue #36's shape, ``nodes`` and ``verdict``."""
    return jsonreport.document("fabric", ok, verdict=report.verdict, nodes=[
        {"node": node.node,
         "ranks": [{"rank": rank.label, "network": rank.network, "gdr": rank.gdr,
                    "nccl": rank.nccl} for rank in node.ranks],
         "network": node.network,
         "devices": [{"name": device.name, "link_layer": device.link_layer,
                      "port": device.port} for device in node.devices],
         "gdr": node.gdr, "intra": node.intra,
         "causes": [{"code": found.code, "evidence": found.evidence, "repair": found.repair}
                    for found in node.causes]}
        for node in report.nodes])
