"""The HTML report's one source: a JSON report, checked against ``report.schema.json`` before
anything is drawn from it::

    report = read_report(Path("apply.json"))   # InputError: the file, the field, what is valid
    check_report(report, "apply --json")       # a report built in this process
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from nodeprov.errors import InputError
from nodeprov.jsonreport import schema
from nodeprov.util.units import clipped

SAID_AT_MOST = 200  # characters of a schema error's words: it may quote a huge value


@functools.cache
def _validator() -> Callable[[Any], Any]:
    import fastjsonschema  # lazily: only reports need it

    validate: Callable[[Any], Any] = fastjsonschema.compile(schema())
    return validate


def check_report(report: Mapping[str, Any], source: str) -> None:
    """InputError naming the field when ``report`` breaks the schema. fastjsonschema compiles
    the schema to Python: a 128-node report (49152 matrix checks) takes 0.2 s where jsonschema,
    the tests' oracle, takes 13 s."""
    from fastjsonschema import JsonSchemaValueException

    try:
        _validator()(report)
    except JsonSchemaValueException as error:
        said = error.message.removeprefix(error.name or "").strip()  # the field says where
        said = clipped(said, SAID_AT_MOST)
        raise InputError(f"{said}; not a nodeprov JSON report (see nodeprov/report.schema.json, "
                         "written by --json of apply, verify, facts and run)", source=source,
                         field="/".join(map(str, error.path[1:])) or "(top)") from None


def read_report(path: Path) -> dict[str, Any]:
    """The JSON report at ``path``, checked; InputError when it cannot be read or is none."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8"
        raise InputError(f"cannot read the report: {reason}; give the file --json wrote",
                         source=str(path)) from None
    try:
        report = json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(f"not JSON: {error.msg} (column {error.colno}); give the file --json "
                         "wrote", source=str(path), line=error.lineno) from None
    if not isinstance(report, dict):
        raise InputError(f"a JSON {type(report).__name__}, not an object: not a nodeprov JSON "
                         "report", source=str(path))
    check_report(report, str(path))
    return report
