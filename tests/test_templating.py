from __future__ import annotations

import pytest
from jinja2 import UndefinedError

from nodeprov.templating import referenced_names, render_value


def test_native_types_survive() -> None:
    assert render_value("{{ port }}", {"port": 29500}) == 29500
    assert render_value({"a": ["{{ x }}-{{ y }}"]}, {"x": 1, "y": 2}) == {"a": ["1-2"]}
    assert render_value("plain text", {}) == "plain text"


def test_undefined_is_an_error() -> None:
    with pytest.raises(UndefinedError):
        render_value("{{ nope }}", {})


def test_referenced_names() -> None:
    assert referenced_names({"a": "{{ x }} {{ facts.hostname }}", "b": ["{{ y|int }}"]}) == {
        "x", "facts", "y"}
