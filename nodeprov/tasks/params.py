"""Task parameters: a frozen dataclass per task, built from the rendered playbook values, each
field checked by a ``validate`` function through ``checked`` (tasks/base.py shows a task).

    params = parse_params(BlockParams, {"path": "/etc/motd", "lines": ["GPU node"]})
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from nodeprov.errors import EXIT_BAD_INPUT, NodeprovError

P = TypeVar("P")
T = TypeVar("T")


class ParamError(NodeprovError, ValueError):
    """A parameter value is invalid; ``field`` names the parameter."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message)


def checked(field: str, check: Callable[[Any], T], value: Any) -> T:
    """``check(value)``, its ValueError raised as a ParamError naming ``field``: how a
    parameter dataclass's ``__post_init__`` validates one field with a ``validate`` function.

        >>> from nodeprov.util import validate
        >>> checked("rdzv_port", validate.port, "29500")
        29500
        >>> checked("rdzv_port", validate.port, "0")
        Traceback (most recent call last):
        ...
        nodeprov.tasks.params.ParamError: 0 is not a port; expected an integer from 1 to 65535
    """
    try:
        return check(value)
    except ParamError:
        raise
    except ValueError as error:
        raise ParamError(field, str(error)) from None


def param_names(params_type: type[Any]) -> list[str]:
    return [f.name for f in dataclasses.fields(params_type)]


def parse_params(params_type: type[P], raw: Mapping[str, Any]) -> P:
    """Build a parameter dataclass from a rendered mapping, coercing and checking types.

    Unknown or missing parameters and wrong types raise ParamError naming the field; a
    dataclass's own ``__post_init__`` may raise ParamError or ValueError for value checks.
    """
    fields = {f.name: f for f in dataclasses.fields(params_type)}  # type: ignore[arg-type]
    unknown = sorted(set(raw) - set(fields))
    if unknown:
        raise ParamError(unknown[0], f"unknown parameter; valid: {', '.join(fields)}")
    hints = typing.get_type_hints(params_type)
    values: dict[str, Any] = {}
    for name, spec in fields.items():
        if name not in raw:
            if spec.default is dataclasses.MISSING and spec.default_factory is dataclasses.MISSING:
                raise ParamError(name, "required parameter is missing")
            continue
        values[name] = _coerce(name, hints[name], raw[name])
    try:
        return params_type(**values)
    except ParamError:
        raise
    except (ValueError, TypeError) as error:
        raise ParamError(_field_of(error, fields), str(error)) from None


def _field_of(error: Exception, fields: Mapping[str, Any]) -> str:
    return next((name for name in fields if name in str(error)), "")


def _coerce(name: str, hint: Any, value: Any) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [arg for arg in args if arg is not type(None)]
        return _coerce(name, inner[0], value)
    if origin is typing.Literal:
        if value not in args:
            raise ParamError(name, f"{value!r} is not one of: {', '.join(map(str, args))}")
        return value
    if hint is bool:
        if isinstance(value, bool):
            return value
        if str(value).lower() in ("true", "yes", "1"):
            return True
        if str(value).lower() in ("false", "no", "0"):
            return False
        raise ParamError(name, f"{value!r} is not a boolean (true or false)")
    if hint is int:
        if isinstance(value, bool):
            raise ParamError(name, f"{value!r} is not an integer")
        try:
            return int(str(value), 10)
        except ValueError:
            raise ParamError(name, f"{value!r} is not an integer") from None
    if hint is str:
        if isinstance(value, (dict, list, tuple)):
            raise ParamError(name, f"expected a string, got {type(value).__name__}")
        return str(value)
    if origin in (tuple, list, Sequence) or hint in (tuple, list):
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            raise ParamError(name, f"expected a list, got {type(value).__name__}")
        item = args[0] if args else str
        return tuple(_coerce(name, item, element) for element in value)
    if origin in (dict, Mapping) or hint is dict:
        if not isinstance(value, Mapping):
            raise ParamError(name, f"expected a mapping, got {type(value).__name__}")
        key_type, value_type = args or (str, str)
        return {_coerce(name, key_type, k): _coerce(name, value_type, v) for k, v in value.items()}
    return value
