"""The shape every task has: read what is there, decide what must change, let the runner act.

A task is one module: a frozen parameter dataclass, a probe (a read-only command whose output
shows the current state), a pure ``plan`` comparing that state with the wanted one, and a
TaskType; one line in ``registry.py`` makes it usable in playbooks. ``block.py`` is the
template::

    @dataclass(frozen=True)
    class BlockParams:                        # fields = the task's parameters in a playbook
        path: str
        lines: tuple[str, ...] = ()

        def __post_init__(self) -> None:      # reject what can never be valid, naming the field
            checked("path", validate.absolute_path, self.path)

    def probe(params: BlockParams) -> Probe:  # runs with every other probe, in one round trip
        return files.read_many_probe(params.path)

    def plan(ctx: Context, params: BlockParams, observed: str) -> Plan:
        old = files.observed_files(observed).get(params.path)
        new = files.replace_block(old or "", "managed", params.lines)
        if new == old:
            return Plan.noop(f"{params.path}: block already has {len(params.lines)} lines")
        return Plan.of(Change(f"update block in {params.path}", (Write(params.path, new),),
                              diff=files.unified_diff(params.path, old, new)))

    TASK = TaskType("block", "Keep a marked block of lines in a text file", BlockParams,
                    probe, plan)

``parse_params`` builds the dataclass from the rendered playbook values (types coerced, unknown
and missing parameters refused), so a bad value stops the run before any connection. ``plan``
may read ``ctx.facts`` and every node's facts (``ctx.cluster``); it raises TaskFailed when the
node cannot get there, with how to fix it. Actions (Run, Write, Upload, Local,
ConfirmNewConnection) are the only things the runner executes; a probe must exit 0 when the
state is absent.

An empty plan means in sync: the same plan drives ``apply``, ``--check``, ``--diff``, the change
report and ``verify``'s drift report (``nodeprov.checks.plans``), so a new task is verified with
no other change. Its tests (tests/tasks/kit.py: ``plan_task``, ``make_facts``) are plans on
recorded files, and the four steps on the local test cluster: check reports a change, apply
changes, apply again changes nothing, check reports nothing (tests/tasks/test_sysctl.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

from nodeprov.tasks.params import ParamError, checked, param_names, parse_params

if TYPE_CHECKING:
    from nodeprov.inventory import Host
    from nodeprov.remote.facts import Facts


# --- actions: the only things the runner executes on a node -------------------------------------

@dataclass(frozen=True)
class Run:
    """Run ``argv`` on the node (quoted by the runner, never through a hand-built string)."""

    argv: tuple[str, ...]
    stdin: str | None = None
    hint: str = field(default="", compare=False)  # how to fix it, should it fail

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


# --- task types (their parameters: params.py) ----------------------------------------------------

P = TypeVar("P")


@dataclass(frozen=True)
class TaskType(Generic[P]):
    """A registered task: its name, its parameter dataclass, probe and plan."""

    name: str
    description: str
    params: type[P]
    probe: Callable[[P], Probe | None]
    plan: Callable[[Context, P, str], Plan]


__all__ = [
    "Action", "Change", "ConfirmNewConnection", "Context", "Local", "ParamError", "Plan", "Probe",
    "Run", "TaskFailed", "TaskType", "Upload", "Write", "checked", "param_names", "parse_params",
]
