from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest
from jinja2 import Environment, TemplateError, UndefinedError

from nodeprov.util.jinja import Templates


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


def test_the_sandbox_keeps_what_playbooks_use() -> None:
    templates = Templates()
    variables = {"nodes": ["n1", "n2"], "port": 29500, "subnet": "10.0.0.0/24"}
    assert templates.render("{{ nodes|join(',') }}:{{ port + 1 }}", variables) == "n1,n2:29501"
    assert templates.render("{{ range(3)|list }}", {}) == [0, 1, 2]
    assert templates.render("{{ subnet.split('/')[0] }}", variables) == "10.0.0.0"
    assert templates.render("{{ '%05d'|format(7) }} {{ 'x' * 3 }} {{ 2 ** 10 }}", {}) == (
        "00007 xxx 1024")
    assert templates.render("{% set ns = namespace(n=0) %}{% for x in nodes %}"
                            "{% set ns.n = ns.n + 1 %}{% endfor %}{{ ns.n }}", variables) == "2"


@pytest.mark.parametrize(("template", "message"), [
    ("{{ cycler.__init__.__globals__ }}", "unsafe"),
    ("{{ x.__class__ }}", "unsafe"),
    ("{{ x['__class__'] }}", "unsafe"),
    ("{{ lipsum(n=10**6) }}", "'lipsum' is undefined"),
    ("{{ [1].append(2) }}", "unsafe"),  # immutable: no changing the host's vars
    ("{{ range(10**8)|list }}", "100000 range items"),
    ("{% for i in range(60000) %}{% for j in range(60000) %}{% endfor %}{% endfor %}",
     "100000 range items"),
    ("{{ 'ab' * 10**9 }}", "over the template limit"),
    ("{{ 7 ** 1000000 }}", "4096-bit"),
    ("{{ '%099999999d' % 1 }}", "over the template limit"),
    ("{{ '{:>99999999}'.format(1) }}", "over the template limit"),
    ("{{ 'x'.ljust(10**9) }}", "over the template limit"),
    ("{{ 'x'|indent(10**9) }}", "over the template limit"),
    ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "too deep"),
    ("{{ x|int + 'a' }}", "TypeError"),
])
def test_what_a_template_may_not_do_is_a_template_error(template: str, message: str) -> None:
    with pytest.raises(TemplateError, match=re.escape(message)):
        Templates().render(template, {"x": "1"})
