"""The ``--json PATH`` report of every command, one schema: ``report.schema.json`` beside this
module (docs/json-report.md)::

    report = document("facts", ok=True, hosts=hosts)  # each command builds its own
    write_report(report, "-")      # '-': stdout, where nothing else then goes; else a path

Every document has ``schema_version``, ``nodeprov_version``, ``command`` and ``ok``; the
schema says what each command adds. Numbers are in base units: bytes, seconds, bytes per second.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from importlib import resources
from typing import Any

from nodeprov import __version__
from nodeprov.util import reportfile

SCHEMA_VERSION = 1
SCHEMA_FILE = "report.schema.json"


def schema() -> dict[str, Any]:
    """The JSON Schema every report follows (shipped in the package)."""
    loaded: dict[str, Any] = json.loads(
        resources.files("nodeprov").joinpath(SCHEMA_FILE).read_text(encoding="utf-8"))
    return loaded


def document(command: str, ok: bool, **fields: Any) -> dict[str, Any]:
    """The fields every report starts with (the nodeprov that wrote it too: a report read
    later, or sent with a bug report, says so), then the command's own."""
    return {"schema_version": SCHEMA_VERSION, "nodeprov_version": __version__,
            "command": command, "ok": ok, **fields}


def write_report(report: Mapping[str, Any], json_path: str) -> None:
    """To ``json_path`` (``util.reportfile``: private, atomic, never through a symlink; the
    CLI checked the path before the run), or stdout for ``-``; every command writes its report
    through here (called as ``jsonreport.write_report``, so the tests check every report they
    produce)."""
    text = json.dumps(report, indent=2) + "\n"
    if json_path == reportfile.STDOUT:
        sys.stdout.write(text)
    else:
        reportfile.write_private(json_path, text)
