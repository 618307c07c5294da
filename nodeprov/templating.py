"""Jinja2 rendering of task parameters with a host's vars and facts (StrictUndefined).

    >>> render_value("{{ rdzv_port }}", {"rdzv_port": 29500})
    29500
    >>> render_value(["{{ a }}", "x"], {"a": "y"})
    ['y', 'x']
    >>> render_value("{{ v }}", {"v": "3.10"})
    '3.10'
    >>> render_value("{{ a }}.{{ b }}", {"a": 3, "b": 10})
    '3.10'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from jinja2 import Environment, StrictUndefined, TemplateError, Undefined, meta

_ENVIRONMENT = Environment(undefined=StrictUndefined, autoescape=False)
# "{{ expr }}" alone keeps the value's type (29500 stays an int, a list a list); anything else
# renders to text. No literal_eval of text: "3.10" must not become the float 3.1.
_SINGLE_EXPRESSION = re.compile(r"^\{\{(?P<expr>(?:(?!\}\}).)*)\}\}$", re.DOTALL)


def is_template(value: Any) -> bool:
    return isinstance(value, str) and ("{{" in value or "{%" in value)


def render_value(value: Any, variables: Mapping[str, Any]) -> Any:
    """Render every template string inside ``value`` (native types kept: 29500 stays an int)."""
    if is_template(value):
        single = _SINGLE_EXPRESSION.match(value.strip())
        if single is None:
            return _ENVIRONMENT.from_string(value).render(variables)
        result = _ENVIRONMENT.compile_expression(single["expr"].strip(),
                                                 undefined_to_none=False)(**variables)
        if isinstance(result, Undefined):
            str(result)  # an undefined name comes back unrendered: make it raise
        return result
    if isinstance(value, Mapping):
        return {key: render_value(item, variables) for key, item in value.items()}
    if isinstance(value, list):
        return [render_value(item, variables) for item in value]
    return value


def referenced_names(value: Any) -> set[str]:
    """Top-level variable names a value's templates use (raises TemplateError on bad syntax)."""
    if is_template(value):
        return set(meta.find_undeclared_variables(_ENVIRONMENT.parse(value)))
    if isinstance(value, Mapping):
        return set().union(*(referenced_names(item) for item in value.values()))
    if isinstance(value, list):
        return set().union(*(referenced_names(item) for item in value))
    return set()


__all__ = ["TemplateError", "is_template", "referenced_names", "render_value"]
