"""The ``--json PATH`` report of every command, one schema: ``report.schema.json`` beside this
module (docs/json-report.md)::

    report = document("facts", ok=True, hosts=hosts)  # each command builds its own
    write_report(report, "-")      # '-': stdout, where nothing else then goes; else a path

Every document has ``schema_version``, ``command`` and ``ok``; the schema says what each
command adds. Numbers are in base units: bytes, seconds, bytes per second.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

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


def write_report(report: Mapping[str, Any], json_path: str) -> None:
    """To ``json_path``, or stdout for ``-``; every command writes its report through here
    (called as ``jsonreport.write_report``, so the tests check every report they produce)."""
    text = json.dumps(report, indent=2) + "\n"
    if json_path == "-":
        sys.stdout.write(text)
    else:
        Path(json_path).write_text(text, encoding="utf-8")
