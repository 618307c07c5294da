"""Jinja2 rendering of task parameters with a host's vars and facts, in Jinja2's immutable
sandbox (StrictUndefined).

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

A template is the user's text, not code: it reaches no Python internals (``__globals__``,
``__subclasses__``: jinja2's SecurityError), and what it may build is bounded: ``range`` gives
at most ``MAX_RANGE`` items per rendering in all, an output or value at most ``MAX_OUTPUT``
characters, ``*``, ``**`` and ``%`` are checked before they compute. Every failure while
rendering is a ``TemplateError``:

    >>> Templates().render("{{ range(10**8)|list }}", {})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    nodeprov.util.jinja.TemplateLimit: range(...) would give 100000000 items; a template may ...
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from jinja2 import StrictUndefined, Template, TemplateError, Undefined, meta, nodes
from jinja2.environment import TemplateExpression
from jinja2.exceptions import SecurityError
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment

from nodeprov.errors import EXIT_BAD_INPUT, NodeprovError

# "{{ expr }}" alone keeps the value's type (29500 stays an int, a list a list); anything else
# renders to text. No literal_eval of text: "3.10" must not become the float 3.1.
_SINGLE_EXPRESSION = re.compile(r"^\{\{(?P<expr>(?:(?!\}\}).)*)\}\}$", re.DOTALL)

MAX_OUTPUT = 4 * 1024 * 1024  # characters: as large as a playbook file may be
MAX_RANGE = 100_000  # range() items per rendering, all calls together (nested loops count)
_MAX_POWER_BITS = 4096
# str methods and filters whose integer argument is an output width
_WIDTH_METHODS = frozenset({"center", "ljust", "rjust", "zfill", "expandtabs"})
_WIDTH_FILTERS = ("center", "indent", "wordwrap", "truncate", "slice", "batch")
# a %-format or str.format field with a width or precision of 7+ digits, or taken from an argument
_HUGE_FIELD = re.compile(r"%[-#0 +]*(\d{7,}|\*|\d*\.(\d{7,}|\*))|\{[^{}]*:[^{}]*\d{7,}[^{}]*\}")


T = TypeVar("T")


class TemplateLimit(NodeprovError, SecurityError):
    """A template that would build more than nodeprov's limits allow."""

    exit_code = EXIT_BAD_INPUT


def is_template(value: Any) -> bool:
    return isinstance(value, str) and ("{{" in value or "{%" in value)


def _check_int(value: Any, what: str) -> None:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_OUTPUT:
        raise TemplateLimit(f"{what} {value} is over the template limit of {MAX_OUTPUT}")


def _check_format(text: Any) -> None:
    if isinstance(text, str) and _HUGE_FIELD.search(text):
        raise TemplateLimit("a format with a width or precision of a million or more (or "
                            "taken from an argument) is over the template limit")


def _width_checked(function: Callable[..., Any], name: str) -> Callable[..., Any]:
    def checked(*args: Any, **kwargs: Any) -> Any:
        for value in (*args, *kwargs.values()):
            _check_int(value, f"{name}:")
        return function(*args, **kwargs)
    checked.__dict__.update(function.__dict__)  # keeps jinja2's pass_context/pass_environment
    return checked


def _measured(value: Any, budget: int = MAX_OUTPUT) -> int:
    """What is left of ``budget`` after counting ``value``'s characters and items (shared
    references counted each time, as text rendering would); raises when nothing is left."""
    stack = [value]
    while stack:
        item = stack.pop()
        budget -= len(item) if isinstance(item, (str, bytes)) else 1
        if isinstance(item, Mapping):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack.extend(item)
        if budget < 0:
            raise TemplateLimit(f"a template value is over the limit of {MAX_OUTPUT} "
                                "characters and items")
    return budget


class LimitedSandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox, with ``*``, ``**`` and ``%`` checked and no ``lipsum``."""

    intercepted_binops = frozenset({"*", "**", "%"})

    def __init__(self) -> None:
        super().__init__(undefined=StrictUndefined, autoescape=False)
        del self.globals["lipsum"]  # text made to fill space: nothing a playbook needs
        for name in _WIDTH_FILTERS:
            self.filters[name] = _width_checked(self.filters[name], name)
        self.filters["format"] = self._format_filter(self.filters["format"])

    @staticmethod
    def _format_filter(function: Callable[..., Any]) -> Callable[..., Any]:
        def checked(value: Any, *args: Any, **kwargs: Any) -> Any:
            _check_format(value)
            return function(value, *args, **kwargs)
        return checked

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        if operator == "*":
            for sequence, times in ((left, right), (right, left)):
                if isinstance(sequence, (str, list, tuple)) and isinstance(times, int):
                    _check_int(len(sequence) * times, "a repeated value of length")
        elif operator == "**" and isinstance(left, int) and isinstance(right, int):
            if right > 0 and abs(left) > 1 and right * abs(left).bit_length() > _MAX_POWER_BITS:
                raise TemplateLimit(f"{left} ** {right} is over the template limit of "
                                    f"{_MAX_POWER_BITS}-bit numbers")
        elif operator == "%":
            _check_format(left)
        return super().call_binop(context, operator, left, right)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        wrapped = super().wrap_str_format(value)
        if wrapped is not None:
            _check_format(value.__self__)
        return wrapped

    def call(__self, __context: Context, __obj: Any, *args: Any,
             **kwargs: Any) -> Any:
        if isinstance(getattr(__obj, "__self__", None), str) and (
                getattr(__obj, "__name__", "") in _WIDTH_METHODS):
            for value in (*args, *kwargs.values()):
                _check_int(value, f"{__obj.__name__}():")
        result = super().call(__context, __obj, *args, **kwargs)
        _measured(result)
        return result


class RangeBudget:
    """``range`` for one rendering: all its calls together give at most MAX_RANGE items."""

    def __init__(self) -> None:
        self.left = MAX_RANGE

    def __call__(self, *args: int) -> range:
        numbers = range(*args)
        self.left -= len(numbers)
        if self.left < 0:
            raise TemplateLimit(f"range(...) would give {len(numbers)} items; a template may "
                                f"make {MAX_RANGE} range items in all")
        return numbers


class Templates:
    """Renders template strings, compiling each distinct source once (safe across threads: at
    worst two threads compile the same source, and either result is kept)."""

    def __init__(self) -> None:
        self._environment = LimitedSandbox()
        self._templates: dict[str, Template] = {}
        self._expressions: dict[str, TemplateExpression] = {}
        self._names: dict[str, frozenset[str]] = {}

    def render(self, value: Any, variables: Mapping[str, Any]) -> Any:
        """Render every template string inside ``value`` (native types kept: 29500 stays an
        int); whatever goes wrong is a TemplateError (a limit: TemplateLimit)."""
        try:
            return self._render(value, {**variables, "range": RangeBudget()})
        except TemplateError:
            raise
        except RecursionError:
            raise TemplateLimit("template nested or recursing too deep") from None
        except MemoryError:
            raise TemplateLimit("template needs more memory than this machine has") from None
        except (TypeError, ValueError, ArithmeticError, LookupError) as error:
            # a filter given the wrong type raises plain Python errors while rendering
            raise TemplateError(f"{type(error).__name__}: {error}") from None

    def _render(self, value: Any, variables: Mapping[str, Any]) -> Any:
        if is_template(value):
            single = _SINGLE_EXPRESSION.match(value.strip())
            if single is None:
                return "".join(bounded(self._template(value).generate(variables)))
            result = self._expression(single["expr"].strip())(**variables)
            if isinstance(result, Undefined):
                str(result)  # an undefined name comes back unrendered: make it raise
            _measured(result)
            return result
        if isinstance(value, Mapping):
            return {key: self._render(item, variables) for key, item in value.items()}
        if isinstance(value, list):
            return [self._render(item, variables) for item in value]
        return value

    def referenced_names(self, value: Any) -> set[str]:
        """Top-level variable names a value's templates use (raises TemplateError on bad
        syntax).

            >>> sorted(Templates().referenced_names({"a": "{{ x }}", "b": ["{{ facts.y }}"]}))
            ['facts', 'x']
        """
        if is_template(value):
            if value not in self._names:
                try:
                    parsed = self._environment.parse(value)
                except RecursionError:
                    raise TemplateLimit("template nested too deep") from None
                _refuse_internals(parsed)
                self._names[value] = frozenset(meta.find_undeclared_variables(parsed)) - {
                    *self._environment.globals, "range"}
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


def _refuse_internals(parsed: nodes.Template) -> None:
    """Refuse ``x.__y__`` and ``x['_y']`` when loading, not only when rendering: a template
    rendered with the node's facts renders after connecting, and should fail before."""
    for node in parsed.find_all((nodes.Getattr, nodes.Getitem)):
        name: object
        if isinstance(node, nodes.Getattr):
            name = node.attr
        else:
            key = node.arg if isinstance(node, nodes.Getitem) else None
            name = key.value if isinstance(key, nodes.Const) else None
        if isinstance(name, str) and name.startswith("_"):
            raise SecurityError(f"access to attribute {name!r} is unsafe: a template may not "
                                "reach Python internals")


def hide(text: str, secret: str | None) -> str:
    """``text`` with ``secret`` (the become password) masked, for a message that may quote a
    rendered value.

    >>> hide("'hunter2' is not an absolute path", "hunter2")
    "'***' is not an absolute path"
    """
    return text.replace(secret, "***") if secret else text


def bounded(chunks: Iterator[T]) -> Iterator[T]:
    """The chunks of a rendering (text, or native values for the inventory's templar),
    stopped as soon as they pass MAX_OUTPUT characters and items together."""
    left = MAX_OUTPUT
    for chunk in chunks:
        left = _measured(chunk, left)
        yield chunk


__all__ = ["MAX_OUTPUT", "MAX_RANGE", "TemplateError", "TemplateLimit", "Templates", "bounded",
           "hide", "is_template"]
