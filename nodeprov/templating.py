"""Jinja2 rendering of task parameters with a host's vars and facts (StrictUndefined).

    >>> render_value("{{ rdzv_port }}", {"rdzv_port": 29500})
    29500
    >>> render_value(["{{ a }}", "x"], {"a": "y"})
    ['y', 'x']
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jinja2 import StrictUndefined, TemplateError, Undefined, meta
from jinja2.nativetypes import NativeEnvironment

_ENVIRONMENT = NativeEnvironment(undefined=StrictUndefined, autoescape=False)


def is_template(value: Any) -> bool:
    return isinstance(value, str) and ("{{" in value or "{%" in value)


def render_value(value: Any, variables: Mapping[str, Any]) -> Any:
    """Render every template string inside ``value`` (native types kept: 29500 stays an int)."""
    if is_template(value):
        rendered = _ENVIRONMENT.from_string(value).render(variables)
        if isinstance(rendered, Undefined):
            str(rendered)  # a lone undefined name comes back unrendered: make it raise
        return rendered
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
