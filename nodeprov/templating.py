"""Jinja2 rendering of task parameters with a host's vars and facts (StrictUndefined).

A playbook renders the same few templates for every host, so ``Templates`` compiles each
distinct source once and keeps it for the run:

    >>> templates = Templates()
    >>> templates.render("{{ rdzv_port }}", {"rdzv_port": 29500})
    29500
    >>> templates.render(["{{ a }}", "x"], {"a": "y"})
    ['y', 'x']
    >>> templates.render("{{ v }}", {"v": "3.10"})
    '3.10'
    >>> templates.render("{{ a }}.{{ b }}", {"a": 3, "b": 10})
    '3.10'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from jinja2 import Environment, StrictUndefined, Template, TemplateError, Undefined, meta
from jinja2.environment import TemplateExpression

# "{{ expr }}" alone keeps the value's type (29500 stays an int, a list a list); anything else
# renders to text. No literal_eval of text: "3.10" must not become the float 3.1.
_SINGLE_EXPRESSION = re.compile(r"^\{\{(?P<expr>(?:(?!\}\}).)*)\}\}$", re.DOTALL)


def is_template(value: Any) -> bool:
    return isinstance(value, str) and ("{{" in value or "{%" in value)


class Templates:
    """Renders template strings, compiling each distinct source once (safe across threads: at
    worst two threads compile the same source, and either result is kept)."""

    def __init__(self) -> None:
        self._environment = Environment(undefined=StrictUndefined, autoescape=False)
        self._templates: dict[str, Template] = {}
        self._expressions: dict[str, TemplateExpression] = {}
        self._names: dict[str, frozenset[str]] = {}

    def render(self, value: Any, variables: Mapping[str, Any]) -> Any:
        """Render every template string inside ``value`` (native types kept: 29500 stays an
        int)."""
        if is_template(value):
            single = _SINGLE_EXPRESSION.match(value.strip())
            if single is None:
                return self._template(value).render(variables)
            result = self._expression(single["expr"].strip())(**variables)
            if isinstance(result, Undefined):
                str(result)  # an undefined name comes back unrendered: make it raise
            return result
        if isinstance(value, Mapping):
            return {key: self.render(item, variables) for key, item in value.items()}
        if isinstance(value, list):
            return [self.render(item, variables) for item in value]
        return value

    def referenced_names(self, value: Any) -> set[str]:
        """Top-level variable names a value's templates use (raises TemplateError on bad
        syntax).

            >>> sorted(Templates().referenced_names({"a": "{{ x }}", "b": ["{{ facts.y }}"]}))
            ['facts', 'x']
        """
        if is_template(value):
            if value not in self._names:
                self._names[value] = frozenset(
                    meta.find_undeclared_variables(self._environment.parse(value)))
            return set(self._names[value])
        if isinstance(value, Mapping):
            return set().union(*(self.referenced_names(item) for item in value.values()))
        if isinstance(value, list):
            return set().union(*(self.referenced_names(item) for item in value))
        return set()

    def _template(self, source: str) -> Template:
        if source not in self._templates:
            self._templates[source] = self._environment.from_string(source)
        return self._templates[source]

    def _expression(self, source: str) -> TemplateExpression:
        if source not in self._expressions:
            self._expressions[source] = self._environment.compile_expression(
                source, undefined_to_none=False)
        return self._expressions[source]


__all__ = ["TemplateError", "Templates", "is_template"]
