"""download_once's hashes: pip's installation report read into the files the seed must
download, each with the sha256 the index gave (a recorded report: tests/data/pip-report)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nodeprov.wheels.resolve import Pinned, parse_report, requirements

REPORT = Path(__file__).parents[1] / "data" / "pip-report" / "torch-2.13.0-cpu.json"


def test_a_recorded_report_gives_every_wheel_with_its_sha256() -> None:
    pins = parse_report(REPORT.read_text())
    assert len(pins) == 11
    assert pins[0] == Pinned(
        "torch", "2.13.0+cpu", "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl",
        "6746dbcbeb526eb61330b76b41ff1b4eb848951103a892eeb080dfa2b264667b")
    assert {pin.name for pin in pins} >= {"numpy", "sympy", "MarkupSafe", "typing_extensions"}
    assert requirements(pins[:2]) == (
        "torch==2.13.0+cpu --hash=sha256:6746dbcbeb526eb61330b76b41ff1b4eb848951103a892eeb080df"
        "a2b264667b\n"
        "numpy==2.4.6 --hash=sha256:89cd468399cfd2504718f0ba50e410dca55a170b61a02ad92bb18c8a6518"
        "6e93\n")


def item(url: str, digest: str | None = "a" * 64, **more: Any) -> dict[str, Any]:
    archive = {"hashes": {"sha256": digest}} if digest else {}
    return {"download_info": {"url": url, "archive_info": archive},
            "metadata": {"name": "six", "version": "1.17.0"}, **more}


def test_a_direct_reference_is_pinned_by_its_url() -> None:
    url = "https://files.example/six-1.17.0-py2.py3-none-any.whl"
    (pin,) = parse_report(json.dumps({"install": [item(url, is_direct=True)]}))
    assert pin.line == f"six @ {url} --hash=sha256:{'a' * 64}"


@pytest.mark.parametrize(("url", "digest", "why"), [
    ("https://m.example/six-1.17.0-py2.py3-none-any.whl", None, "the index gives no sha256"),
    ("https://m.example/six-1.17.0.tar.gz", "a" * 64, "is not a wheel"),
    ("https://m.example/..%2F..%2Fetc%2Fcron.d%2Fx.whl", "a" * 64, "is not a wheel"),
])
def test_what_cannot_be_checked_is_refused(url: str, digest: str | None, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        parse_report(json.dumps({"install": [item(url, digest)]}))
