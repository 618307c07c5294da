"""Every JSON report the tests produce is checked against the shipped schema::

    assert_valid(json.loads(text))     # a report read back from a file or stdout

The conftest's autouse fixture routes every report written in-process through
``checked_writer``; tests that run nodeprov as a process call ``assert_valid`` on what they read.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from typing import Any

import jsonschema

from nodeprov.jsonreport import schema


@functools.cache
def validator() -> jsonschema.Draft202012Validator:
    loaded = schema()
    jsonschema.Draft202012Validator.check_schema(loaded)
    return jsonschema.Draft202012Validator(loaded)


def assert_valid(report: Mapping[str, Any]) -> None:
    errors = sorted(validator().iter_errors(report), key=lambda error: list(error.path))
    assert not errors, "report breaks report.schema.json:\n" + "\n".join(
        f"  {'/'.join(map(str, error.path)) or '(top)'}: {error.message}" for error in errors)


def checked_writer(write: Callable[[Mapping[str, Any], str], None], broken: list[str]
                   ) -> Callable[[Mapping[str, Any], str], None]:
    """``write``, after checking the report as it is written (JSON); a broken one is also
    kept in ``broken``, since a CLI runner would turn the assertion into exit code 1."""
    def write_checked(report: Mapping[str, Any], json_path: str) -> None:
        try:
            assert_valid(json.loads(json.dumps(report)))
        except AssertionError as error:
            broken.append(str(error))
            raise
        write(report, json_path)
    return write_checked
