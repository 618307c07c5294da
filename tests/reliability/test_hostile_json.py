"""Hostile JSON from nodes and report files (issue #34): a job result nested 100,000 deep or
holding a 400-digit number ended the whole run in a RecursionError/OverflowError traceback, a
report's 1e308 duration `nodeprov report` in an OverflowError. Now a bad one fails its node (or
the command, exit 2) in one line, and every other node's result survives.

The fuzz tests feed the job-result reader and the report reader (and the page drawn from what it
accepts) random and adversarial JSON from a seeded generator: hypothesis is not a dependency,
and a seed makes a failure repeatable.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nodeprov.errors import InputError
from nodeprov.htmlreport import read_report, render_html
from nodeprov.job.nodejob import Stopped
from nodeprov.proof.launch import _read_result
from nodeprov.proof.results import parse_result

RESULT = (Path(__file__).parents[1] / "job" / "data" / "result_gloo_2ranks.json").read_text()
REPORT = (Path(__file__).parents[1] / "htmlreport" / "data" / "apply-3.json").read_text()
DEEP = "[" * 100_000 + "]" * 100_000
# Values that broke a reader or what came after it, or could: Python's json reads NaN and
# Infinity, ints of 4300 digits, floats to 1.8e308
ADVERSARIAL: list[Any] = [
    10 ** 400, -(10 ** 400), 2 ** 63, 1e308, -1e308, 5e-324, float("nan"), float("inf"),
    float("-inf"), True, None, "", "x" * 100_000, "\u202e\x00\n", [], {}, [[[[]]]], -1, 0,
]


def mutated(document: Any, rng: random.Random) -> Any:
    """``document`` with one value somewhere replaced by an adversarial or random one."""
    copy = json.loads(json.dumps(document))
    place: Any = copy
    for _ in range(rng.randint(1, 6)):
        keys = list(place) if isinstance(place, dict) else list(range(len(place)))
        if not keys:
            break
        key = rng.choice(keys)
        if not isinstance(place[key], dict | list) or rng.random() < 0.3:
            place[key] = rng.choice(ADVERSARIAL) if rng.random() < 0.7 \
                else random_value(rng, 4)
            break
        place = place[key]
    return copy


def random_value(rng: random.Random, depth: int) -> Any:
    kind = rng.randrange(8 if depth else 5)
    if kind == 0:
        return rng.choice(ADVERSARIAL[:10])
    if kind == 1:
        return rng.randint(-(10 ** rng.randint(1, 30)), 10 ** rng.randint(1, 30))
    if kind == 2:
        return rng.uniform(-1e300, 1e300) * rng.choice((1, 1e-300, 10.0))
    if kind == 3:
        return "".join(chr(rng.randrange(0x2FF)) for _ in range(rng.randrange(12)))
    if kind == 4:
        return rng.choice((True, False, None))
    if kind == 5:
        return [random_value(rng, depth - 1) for _ in range(rng.randrange(4))]
    return {str(random_value(rng, 0)): random_value(rng, depth - 1)
            for _ in range(rng.randrange(4))}


def texts(document: str, seed: int, count: int) -> list[str]:
    """Hand-made cases, then ``count`` seeded ones: a mutated ``document`` or random JSON,
    sometimes cut short or with a character changed."""
    rng = random.Random(seed)
    original = json.loads(document)
    cases = [DEEP, '{"a":' * 100_000 + "1" + "}" * 100_000, "9" * 5000, "1e999", "NaN",
             "[" * 64 + "]" * 64, '"' + "[" * 100 + '"', "", "[]", "null", "\x00"]
    for value in ADVERSARIAL:
        cases.append(json.dumps(value))
    for _ in range(count):
        value = mutated(original, rng) if rng.random() < 0.8 else random_value(rng, 5)
        text = json.dumps(value)
        if rng.random() < 0.1:
            text = text[:rng.randrange(len(text) + 1)]
        elif rng.random() < 0.1 and text:
            at = rng.randrange(len(text))
            text = text[:at] + rng.choice('[]{}",:0e-') + text[at + 1:]
        cases.append(text)
    return cases


def only_raises(function: Callable[[], object], allowed: type[Exception]) -> str | None:
    """None when ``function`` returned; the one-line message when it raised ``allowed``;
    anything else propagates and fails the test with its traceback."""
    try:
        function()
    except allowed as error:
        message = str(error)
        assert "\n" not in message and len(message) < 400, message[:1000]
        return message
    return None


@pytest.mark.parametrize("seed", range(3))
def test_the_job_result_reader_only_ever_says_what_is_wrong(seed: int) -> None:
    refused = 0
    for text in texts(RESULT, seed, 400):
        said = only_raises(functools.partial(parse_result, text), ValueError)
        refused += said is not None
    assert refused > 200  # the generator does reach the checks


@pytest.mark.parametrize("seed", range(2))
def test_the_report_reader_and_page_only_ever_say_what_is_wrong(tmp_path: Path,
                                                                seed: int) -> None:
    path = tmp_path / "report.json"
    drawn = 0
    for text in texts(REPORT, seed, 120):
        path.write_text(text)
        said = only_raises(lambda: read_report(path), InputError)
        if said is None:  # what the reader accepts is drawn without a traceback
            assert render_html(read_report(path), str(path)).startswith("<!DOCTYPE html>")
            drawn += 1
        else:
            assert said.startswith(str(path))
    assert drawn > 10


@pytest.mark.parametrize(("text", "said"), [
    (DEEP, "nested more than 64 deep"),
    (RESULT.replace('"wrong": 0', '"wrong": ' + "9" * 400, 1), "a number of 400 digits"),
    (RESULT.replace('"duration_s": ', '"duration_s": 1e308, "x": ', 1), "1e308 is beyond"),
])
def test_a_bad_result_fails_its_node_in_one_line_and_the_others_survive(text: str,
                                                                       said: str) -> None:
    found: dict[str, Stopped | Exception] = {"node1": Stopped(RESULT, {}),
                                             "node2": Stopped(text, {}),
                                             "node3": Stopped(RESULT, {})}
    result, problems, by_node = _read_result(found)
    assert result is not None and sorted(by_node) == ["node1", "node3"]
    assert len(problems) == 1 and problems[0].startswith("node2: job: job result")
    assert said in problems[0] and "\n" not in problems[0]
