"""The ``--json PATH`` report of every command, one schema: ``report.schema.json`` beside this
module (README's "JSON report")::

    document = apply_report(run.results, check=False, proofs=proofs, ok=True)
    write_report(document, "-")      # '-': stdout, where nothing else then goes; else a path

Every document has ``schema_version``, ``command`` and ``ok``; the schema says what each
command adds. Numbers are in base units: bytes, seconds, bytes per second.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from nodeprov.job.matrix import Matrix
    from nodeprov.outcome import HostResult
    from nodeprov.prove import Proof
    from nodeprov.remote.facts import Facts

SCHEMA_VERSION = 1
SCHEMA_FILE = "report.schema.json"


def schema() -> dict[str, Any]:
    """The JSON Schema every report follows (shipped in the package)."""
    loaded: dict[str, Any] = json.loads(
        resources.files("nodeprov").joinpath(SCHEMA_FILE).read_text(encoding="utf-8"))
    return loaded


def document(command: str, ok: bool, **fields: Any) -> dict[str, Any]:
    """The fields every report starts with, then the command's own."""
    return {"schema_version": SCHEMA_VERSION, "command": command, "ok": ok, **fields}


def matrix_json(matrix: Matrix) -> dict[str, Any]:
    """The connectivity matrix as data: apply's and verify's proofs, run's preflight."""
    return {"ok": matrix.ok, "nodes": list(matrix.nodes),
            "checks": [dataclasses.asdict(check) for check in matrix.checks],
            "errors": list(matrix.errors), "problems": matrix.problems(),
            "cells": {source: {target: matrix.cell(source, target) for target in matrix.nodes}
                      for source in matrix.nodes},
            "duration_s": matrix.duration_s}


def host_json(result: HostResult) -> dict[str, Any]:
    # field by field: dataclasses.asdict would deep-copy the full Facts only to drop them
    return {"status": result.status, "tasks": [dataclasses.asdict(t) for t in result.tasks],
            "error": result.error, "duration": result.duration,
            "connections": result.connections, "round_trips": result.round_trips,
            "facts": result.facts.summary() if result.facts else None}


def apply_report(results: Sequence[HostResult], *, check: bool, proofs: Iterable[Proof],
                 ok: bool, **fields: Any) -> dict[str, Any]:
    return document("apply", ok, check=check,
                    hosts={result.name: host_json(result) for result in results},
                    proofs=[proof.to_json() for proof in proofs], **fields)


def facts_report(names: Sequence[str], facts: Mapping[str, Facts],
                 errors: Mapping[str, str]) -> dict[str, Any]:
    """``nodeprov facts``: each host's facts (the one-line-per-fact summary), or its error."""
    hosts = {name: {"status": "ok" if name in facts else "unreachable",
                    "error": errors.get(name),
                    "facts": facts[name].summary() if name in facts else None}
             for name in names}
    return document("facts", not errors, hosts=hosts)


def write_report(report: Mapping[str, Any], json_path: str) -> None:
    """To ``json_path``, or stdout for ``-``; every command writes its report through here
    (called as ``jsonreport.write_report``, so the tests check every report they produce)."""
    text = json.dumps(report, indent=2) + "\n"
    if json_path == "-":
        sys.stdout.write(text)
    else:
        Path(json_path).write_text(text, encoding="utf-8")
