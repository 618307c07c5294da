"""YAML loading with line numbers and refusals of what cannot be YAML."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeprov.errors import InputError
from nodeprov.util.yamlfile import load_yaml_file, load_yaml_text


def test_lines_of_keys_and_items() -> None:
    doc = load_yaml_text("a:\n  b: 1\n  c:\n    - x\n    - y\n", "f.yaml")
    assert doc["a"].line_of("c") == 3
    assert doc["a"]["c"].line_of(1) == 5


@pytest.mark.parametrize(("raw", "message"), [
    (b"", "file is empty"),
    (b"# only a comment\n", "file is empty"),
    (b"\x00\x01\x02binary", "binary data"),
    (b"a: \xff\xfe\n", "not UTF-8"),
    (b"a: [1,\n", "YAML syntax error"),
    (b"a: 1\na: 2\n", "duplicate key 'a'"),
])
def test_refusals(tmp_path: Path, raw: bytes, message: str) -> None:
    path = tmp_path / "x.yaml"
    path.write_bytes(raw)
    with pytest.raises(InputError, match=message) as caught:
        load_yaml_file(path)
    assert str(path) in str(caught.value)


def test_huge_file_is_refused_before_parsing(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    path.write_bytes(b"a: " + b"x" * (5 * 1024 * 1024) + b"\n")
    with pytest.raises(InputError, match="expected a YAML file under 4 MiB"):
        load_yaml_file(path)


def test_missing_file() -> None:
    with pytest.raises(InputError, match="file not found"):
        load_yaml_file(Path("/nonexistent/inventory.yaml"))
