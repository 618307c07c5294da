"""The shape every task has: read what is there, decide what must change, let the runner act.

A task type is a parameter dataclass, a probe (one shell command whose output shows the current
state) and a pure ``plan`` that compares that state with the wanted one::

    def probe(params: HostsParams) -> Probe:
        return Probe(("cat", "--", params.path))

    def plan(ctx: Context, params: HostsParams, observed: str) -> Plan:
        wanted = render(...)
        if observed == wanted:
            return Plan.noop("hosts block already lists 3 nodes")
        return Plan.of(Change("update hosts block", (Write(path, wanted),), diff=...))

    TASK = TaskType("hosts", "Manage the /etc/hosts block", HostsParams, probe, plan)

The runner runs the probes of all of a host's tasks in one SSH round trip, so a run with nothing
to change costs one round trip per host. An empty plan means in sync; the same plan drives
``--check``, ``--diff``, the change report and ``verify``'s drift report.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from nodeprov.facts import Facts
    from nodeprov.inventory import Host


# --- actions: the only things the runner executes on a node -------------------------------------

@dataclass(frozen=True)
class Run:
    """Run ``argv`` on the node (quoted by the runner, never through a hand-built string)."""

    argv: tuple[str, ...]
    stdin: str | None = None

    def __str__(self) -> str:
        return " ".join(self.argv)


@dataclass(frozen=True)
class Write:
    """Atomically replace ``path`` with ``content``, keeping owner and mode (new files: ``mode``).

    Falls back to an in-place write where rename is impossible (a bind-mounted /etc/hosts).
    """

    path: str
    content: str
    mode: int = 0o644

    def __str__(self) -> str:
        return f"write {self.path}"


@dataclass(frozen=True)
class Upload:
    """Copy a file from this machine to the node (SFTP), e.g. a wheel from the wheelhouse.

    A local directory sends its files (not subdirectories or dot files) into ``remote_path``,
    which must exist: a plan cannot list the files of a wheelhouse not yet downloaded.
    """

    local_path: str
    remote_path: str

    def __str__(self) -> str:
        return f"upload {self.local_path} -> {self.remote_path}"


@dataclass(frozen=True)
class ConfirmNewConnection:
    """Prove that a NEW SSH connection to the node still works (confirm-or-revert guards)."""

    why: str

    def __str__(self) -> str:
        return f"confirm a new SSH connection ({self.why})"


@dataclass(frozen=True)
class Local:
    """Run ``argv`` on this machine, not the node, e.g. fill the wheelhouse an Upload then sends.

    Like every action it never runs in ``--check``, so ``plan`` stays free of side effects.
    """

    argv: tuple[str, ...]

    def __str__(self) -> str:
        return "on this machine: " + " ".join(self.argv)


Action = Run | Write | Upload | Local | ConfirmNewConnection


# --- plans ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Change:
    """One change a task would make: what it means, how to do it, and the diff it shows."""

    summary: str
    actions: tuple[Action, ...]
    diff: str = ""


@dataclass(frozen=True)
class Plan:
    """What a task would change on one host; no changes means in sync (``notes`` say why)."""

    changes: tuple[Change, ...] = ()
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    @classmethod
    def noop(cls, *notes: str, warnings: Sequence[str] = ()) -> Plan:
        return cls((), notes, tuple(warnings))

    @classmethod
    def of(cls, *changes: Change, notes: Sequence[str] = (),
           warnings: Sequence[str] = ()) -> Plan:
        return cls(tuple(changes), tuple(notes), tuple(warnings))

    @property
    def in_sync(self) -> bool:
        return not self.changes


@dataclass(frozen=True)
class Probe:
    """A read-only command whose stdout ``plan`` receives as ``observed``.

    It must exit 0 even when the state is absent (print nothing, or a marker, instead).
    """

    argv: tuple[str, ...]


@dataclass(frozen=True)
class Context:
    """What a task may look at: its host, that host's facts, and every host's facts.

    ``cluster`` maps every inventory host name to its Host and Facts (None when unreachable),
    including hosts outside ``--limit``, so the hosts task can list them all.
    """

    host: Host
    facts: Facts
    cluster: Mapping[str, tuple[Host, Facts | None]]


class TaskFailed(Exception):
    """Raised by ``plan`` when the host cannot reach the wanted state (message says why and how
    to fix); the runner reports it as this host's failure for this task."""


# --- task types and their parameters -------------------------------------------------------------

P = TypeVar("P")
T = TypeVar("T")


@dataclass(frozen=True)
class TaskType(Generic[P]):
    """A registered task: its name, its parameter dataclass, probe and plan."""

    name: str
    description: str
    params: type[P]
    probe: Callable[[P], Probe | None]
    plan: Callable[[Context, P, str], Plan]


class ParamError(ValueError):
    """A parameter value is invalid; ``field`` names the parameter."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message)


def checked(field: str, check: Callable[[Any], T], value: Any) -> T:
    """``check(value)``, its ValueError raised as a ParamError naming ``field``: how a
    parameter dataclass's ``__post_init__`` validates one field with a ``validate`` function.

        >>> from nodeprov import validate
        >>> checked("rdzv_port", validate.port, "29500")
        29500
        >>> checked("rdzv_port", validate.port, "0")
        Traceback (most recent call last):
        ...
        nodeprov.tasks.base.ParamError: 0 is not a port; expected an integer from 1 to 65535
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

        >>> @dataclass(frozen=True)
        ... class Demo:
        ...     port: int = 22
        >>> parse_params(Demo, {"port": "2222"})
        Demo(port=2222)
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



__all__ = [
    "Action", "Change", "ConfirmNewConnection", "Context", "Local", "ParamError", "Plan", "Probe",
    "Run", "TaskFailed", "TaskType", "Upload", "Write", "checked", "param_names", "parse_params",
]
