from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from jinja2 import Environment, UndefinedError

from nodeprov.templating import Templates


def test_native_types_survive() -> None:
    templates = Templates()
    assert templates.render("{{ port }}", {"port": 29500}) == 29500
    assert templates.render({"a": ["{{ x }}-{{ y }}"]}, {"x": 1, "y": 2}) == {"a": ["1-2"]}
    assert templates.render("plain text", {}) == "plain text"


def test_undefined_is_an_error() -> None:
    with pytest.raises(UndefinedError):
        Templates().render("{{ nope }}", {})


def test_referenced_names() -> None:
    assert Templates().referenced_names(
        {"a": "{{ x }} {{ facts.hostname }}", "b": ["{{ y|int }}"]}) == {"x", "facts", "y"}


def test_version_strings_stay_strings() -> None:
    templates = Templates()
    assert templates.render("{{ v }}", {"v": "3.10"}) == "3.10"
    assert templates.render("{{ a }}.{{ b }}", {"a": 3, "b": 10}) == "3.10"
    assert templates.render("{{ xs }}", {"xs": ["a"]}) == ["a"]


def test_each_source_compiles_once(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: Counter[str] = Counter()
    for method in ("compile", "parse"):  # what from_string and compile_expression build on
        original = getattr(Environment, method)

        def counting(self: Environment, *args: Any, _method: str = method,
                     _original: Any = original, **kwargs: Any) -> Any:
            calls[_method] += 1
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(Environment, method, counting)
    templates = Templates()
    params = {"port": "{{ port }}", "motd": "node {{ name }}"}
    for _ in range(3):
        assert templates.referenced_names(params) == {"port", "name"}
    rendered = [templates.render(params, {"port": port, "name": f"n{port}"}) for port in (1, 2)]
    assert rendered == [{"port": 1, "motd": "node n1"}, {"port": 2, "motd": "node n2"}]
    assert calls == {"parse": 2, "compile": 2}  # per distinct source, not per call
    # a name undefined for one host still raises after the source was compiled for another
    with pytest.raises(UndefinedError):
        templates.render(params, {"port": 3})
