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
from nodeprov.jsonreport import SCHEMA_VERSION, schema
from nodeprov.util.safejson import loads
from nodeprov.util.units import clipped

SAID_AT_MOST = 200  # characters of a schema error's words: it may quote a huge value
# a 128-node apply's report is 12 MB, its matrix growing as the square of the nodes (256 MiB:
# some 580 nodes); a file this large takes gigabytes once read, and /dev/zero never ends
MAX_BYTES = 256 << 20


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
    source = str(path)
    try:
        with path.open("rb") as stream:  # read, not stat: /dev/zero or a pipe has no st_size
            raw = stream.read(MAX_BYTES + 1)
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8"
        raise InputError(f"cannot read the report: {reason}; give the file --json wrote",
                         source=source) from None
    if len(raw) > MAX_BYTES:
        raise InputError(f"over {MAX_BYTES >> 20} MiB, more than nodeprov report reads; give "
                         "the file --json wrote", source=source)
    report = _parsed(text, source)
    if not isinstance(report, dict):
        raise InputError(f"a JSON {type(report).__name__}, not an object: not a nodeprov JSON "
                         "report", source=source)
    version = report.get("schema_version", "missing")
    if version != SCHEMA_VERSION:  # before the schema: its first complaint would be another
        shown = json.dumps(version) if "schema_version" in report else version  # escaped
        raise InputError(f"{clipped(shown, 40)}, but this nodeprov reads version "
                         f"{SCHEMA_VERSION} reports: draw it with the nodeprov that wrote it",
                         source=source, field="schema_version")
    check_report(report, source)
    return report


def _parsed(text: str, source: str) -> Any:
    """``text`` as JSON, within safejson's limits: no NaN or Infinity (the charts cannot draw
    them), no number beyond 2**53 (the axes' arithmetic overflows), no deep nesting."""
    try:
        return loads(text, what="not a nodeprov JSON report", max_chars=MAX_BYTES)
    except json.JSONDecodeError as error:
        raise InputError(f"not JSON: {error.msg} (column {error.colno}); give the file --json "
                         "wrote", source=source, line=error.lineno) from None
    except ValueError as error:
        raise InputError(f"{error}; give the file --json wrote", source=source) from None
