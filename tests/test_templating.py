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


def test_version_strings_stay_strings() -> None:
    assert render_value("{{ v }}", {"v": "3.10"}) == "3.10"
    assert render_value("{{ a }}.{{ b }}", {"a": 3, "b": 10}) == "3.10"
    assert render_value("{{ xs }}", {"xs": ["a"]}) == ["a"]
