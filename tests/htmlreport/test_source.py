"""A report is read and checked against the schema before anything is drawn; fastjsonschema
(the runtime check) agrees with jsonschema (the tests' oracle) on every case."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from nodeprov.errors import InputError
from nodeprov.htmlreport import source
from nodeprov.htmlreport.source import check_report, read_report
from tests.htmlreport.reports import DATA, recorded
from tests.report_schema import validator

RECORDED = sorted(path.stem for path in DATA.glob("*.json"))


def test_every_recorded_report_reads(tmp_path: Path) -> None:
    for name in RECORDED:
        assert read_report(DATA / f"{name}.json")["command"] in ("apply", "verify", "run",
                                                                  "facts")


@pytest.mark.parametrize(("text", "said"), [
    ('{\n  "command": \n', ":3: not JSON: Expecting value (column 1)"),
    ("[1, 2]", ": a JSON list, not an object: not a nodeprov JSON report"),
    ('{"schema_version": 1, "command": "run", "ok": true}',
     ": (top): must contain ['diagnosis', 'duration_s', 'exit_code', "),
    ('{"schema_version": 2, "command": "facts", "ok": true, "hosts": {}}',
     ": schema_version: 2, but this nodeprov reads version 1 reports: draw it with the nodeprov "
     "that wrote it"),
    # another version's report, however it differs, is named by its version (before: the
    # schema's first complaint, "must contain [...] properties")
    ('{"schema_version": 99}', ": schema_version: 99, but this nodeprov reads version 1"),
    ('{"hosts": {}}', ": schema_version: missing, but this nodeprov reads version 1"),
    # hand-edited: each was a traceback (ValueError, RecursionError, OverflowError drawing the
    # chart, KeyError for a command the page does not know)
    ('{"schema_version": 1, "command": "facts", "ok": true, "hosts": {}, "x": NaN}',
     ": not a nodeprov JSON report: NaN is no JSON number; give the file --json wrote"),
    ('{"schema_version": 1, "x": -Infinity}',
     ": not a nodeprov JSON report: -Infinity is no JSON number"),
    ('{"schema_version": 1, "x": ' + "9" * 5000 + "}",
     ": not a nodeprov JSON report: a number of 5000 digits"),
    ('{"x": ' + "[" * 100_000 + "]" * 100_000 + "}",
     ": not a nodeprov JSON report: nested more than 64 deep"),
    # the schema allows any number; the timeline's arithmetic overflowed (issue #34)
    ('{"schema_version": 1, "duration_s": 1e308}', ": not a nodeprov JSON report: the number "
     "1e308 is beyond 2**53"),
    ('{"schema_version": 1, "exit_code": ' + "9" * 400 + "}",
     ": not a nodeprov JSON report: a number of 400 digits"),
    ('{"schema_version": 1, "command": "deploy", "ok": true, "hosts": {}}',
     ": command: must be one of ['apply', 'verify', 'facts', 'run', 'fabric']; "
     "not a nodeprov JSON "),
])
def test_what_is_no_report_is_one_line_naming_file_and_field(tmp_path: Path, text: str,
                                                             said: str) -> None:
    path = tmp_path / "report.json"
    path.write_text(text)
    with pytest.raises(InputError) as raised:
        read_report(path)
    assert str(raised.value).startswith(f"{path}{said}"), str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_file_without_end_is_refused_by_its_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """/dev/zero: read until memory ran out, and the kernel killed nodeprov."""
    monkeypatch.setattr(source, "MAX_BYTES", 1 << 20)
    with pytest.raises(InputError, match="^/dev/zero: over 1 MiB, more than nodeprov report"):
        read_report(Path("/dev/zero"))


def test_a_nan_in_any_recorded_report_is_refused(tmp_path: Path) -> None:
    """Drawing a hand-edited NaN or Infinity stopped in a ValueError traceback."""
    for field in ("busbw_bytes_per_s", "algbw_bytes_per_s"):
        for constant in ("NaN", "Infinity"):
            report = recorded("apply-3")
            report["proofs"][0]["job"]["result"]["sizes"][0][field] = constant
            path = tmp_path / "report.json"
            path.write_text(json.dumps(report).replace(f'"{constant}"', constant))
            with pytest.raises(InputError, match=f"report: {constant} is no JSON number"):
                read_report(path)


def test_a_missing_or_binary_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"missing.json: cannot read the report: No such file"):
        read_report(tmp_path / "missing.json")
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe{}")
    with pytest.raises(InputError, match="not UTF-8"):
        read_report(tmp_path / "binary.json")


def test_a_wrong_field_deep_down_is_named_by_its_path() -> None:
    report = recorded("run-3")
    report["nodes"]["node1"]["exit_code"] = "x"
    with pytest.raises(InputError) as raised:
        check_report(report, "run.json")
    assert str(raised.value).startswith(
        "run.json: nodes/node1/exit_code: must be integer or null; not a nodeprov JSON report")


def _mutations() -> Iterator[tuple[str, Callable[[dict[str, Any]], None]]]:
    def delete(key: str) -> Callable[[dict[str, Any]], None]:
        return lambda report: report.pop(key, None)

    def setter(*path: Any, value: Any) -> Callable[[dict[str, Any]], None]:
        def change(report: dict[str, Any]) -> None:
            target = report
            for step in path[:-1]:
                target = target[step]
            target[path[-1]] = value
        return change

    for key in ("ok", "command", "hosts", "proofs", "checks", "nodes", "drift", "duration_s"):
        yield f"no {key}", delete(key)
    yield "extra top key", setter("colour", value="red")
    yield "ok as text", setter("ok", value="yes")
    yield "host status unknown", setter("hosts", "node1", "status", value="weird")
    yield "task duration negative", setter("hosts", "node1", "tasks", 0, "duration", value=-1)
    yield "task extra key", setter("hosts", "node1", "tasks", 0, "start", value=1)
    yield "check extra key", setter("proofs", 0, "connectivity", "checks", 0, "x", value=1)
    yield "cell not text", setter("proofs", 0, "connectivity", "cells", "node1", "node2",
                                  value=1)
    yield "size bytes float", setter("proofs", 0, "job", "result", "sizes", 0, "bytes",
                                     value=1.5)
    yield "job null", setter("proofs", 0, "job", value=None)
    yield "rank exit text", setter("nodes", "node1", "exit_code", value="0")
    yield "outcome unknown", setter("checks", 0, "outcome", value="drifted")


@pytest.mark.parametrize("name", RECORDED)
def test_the_runtime_check_agrees_with_the_jsonschema_oracle(name: str) -> None:
    for what, mutate in _mutations():
        report = copy.deepcopy(recorded(name))
        try:
            mutate(report)
        except (KeyError, IndexError, TypeError):
            continue  # this report has no such field
        report = json.loads(json.dumps(report))
        oracle = not list(validator().iter_errors(report))
        try:
            check_report(report, name)
            accepted = True
        except InputError:
            accepted = False
        assert accepted == oracle, f"{name}, {what}: fastjsonschema {accepted}, jsonschema {oracle}"
