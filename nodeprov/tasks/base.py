"""The shape every task has: read what is there, decide what must change, let the runner act.

A task is one module: a frozen parameter dataclass, a probe (a read-only command whose output
shows the current state), a pure ``plan`` comparing that state with the wanted one, and a
TaskType; one line in ``registry.py`` makes it usable in playbooks (docs/writing-a-task.md
lists every file a new task touches). ``block.py`` is the template, shortened here::

    @dataclass(frozen=True)
    class BlockParams:                        # fields = the task's parameters in a playbook
        path: str
        name: str = "managed"
        lines: tuple[str, ...] = ()

        def __post_init__(self) -> None:      # reject what can never be valid, naming the field
            checked("path", validate.absolute_path, self.path)

    def probe(params: BlockParams) -> Probe:  # runs with every other probe, in one round trip
        return reader.read_many_probe(params.path)

    def plan(ctx: Context, params: BlockParams, observed: str) -> Plan:
        old = reader.observed_files(observed).get(params.path)
        whole_block(params.path, old, params.name)    # broken markers: TaskFailed, no write
        new = blocks.replace_block(old or "", params.name, params.lines)
        if new == old:
            return Plan.noop(f"{params.path}: block {params.name!r} already has "
                             f"{len(params.lines)} lines")
        return Plan.of(Change(f"update block {params.name!r} in {params.path}",
                              (Write(params.path, new),),
                              diff=blocks.unified_diff(params.path, old, new)))

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

from nodeprov.errors import NodeprovError
from nodeprov.remote.actions import (
    Action,
    ConfirmNewConnection,
    Local,
    Probe,
    Run,
    Upload,
    Write,
)
from nodeprov.tasks.params import ParamError, checked, param_names, parse_params
from nodeprov.tasks.textfiles import blocks

if TYPE_CHECKING:
    from nodeprov.inventory import Host
    from nodeprov.remote.facts import Facts


# --- plans (their actions and the probes: nodeprov.remote.actions, re-exported here) -------------

@dataclass(frozen=True)
class Change:
    """One change a task would make: what it means, how to do it, and the diff it shows."""

    summary: str
    actions: tuple[Action, ...]
    diff: str = ""


@dataclass(frozen=True)
class Plan:
    """What a task would change on one host; no changes means in sync (``notes`` say why).

    ``conflicts`` are what would still keep the task's effect from holding once its changes
    are made, and what nodeprov must not change itself (a user's line outside our block, a
    user's firewall rule): each says where, what and why, and the one command that undoes
    it, in the words of ``textfiles.byhand``. A plan with conflicts is not in sync: the task
    fails with them (after its own changes), and ``verify`` prints them by hand, with no apply
    command, since no nodeprov command would fix them::

        Plan.noop(conflicts=[byhand.line("/etc/hosts", 5, "10.1.2.77 node1",
                                         "maps node1 to 10.1.2.77, not 10.0.0.1")])
    """

    changes: tuple[Change, ...] = ()
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    conflicts: tuple[str, ...] = ()

    @classmethod
    def noop(cls, *notes: str, warnings: Sequence[str] = (),
             conflicts: Sequence[str] = ()) -> Plan:
        return cls((), notes, tuple(warnings), tuple(conflicts))

    @classmethod
    def of(cls, *changes: Change, notes: Sequence[str] = (), warnings: Sequence[str] = (),
           conflicts: Sequence[str] = ()) -> Plan:
        return cls(tuple(changes), tuple(notes), tuple(warnings), tuple(conflicts))

    @property
    def in_sync(self) -> bool:
        return not self.changes and not self.conflicts


S = TypeVar("S")


@dataclass(frozen=True)
class Context:
    """What a task may look at: its host, that host's facts, and every host's facts.

    ``cluster`` maps every inventory host name to its Host and Facts (None when unreachable),
    including hosts outside ``--limit``, so the hosts task can list them all.
    """

    host: Host
    facts: Facts
    cluster: Mapping[str, tuple[Host, Facts | None]]
    # this run's state of each room with its own actions (nodeprov.engine.handlers), by type
    states: Mapping[type, object] = field(default_factory=dict)

    def state(self, kind: type[S]) -> S | None:
        """This run's ``kind``, e.g. ``ctx.state(Distribution)``: which node seeds each wheel
        set (None outside a run, as in a plan's unit test)."""
        found = self.states.get(kind)
        return found if isinstance(found, kind) else None


class TaskFailed(NodeprovError):
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


def whole_block(path: str, text: str | None, name: str) -> None:
    """TaskFailed naming ``path`` and the line where its markers of block ``name`` are not one
    whole block (the node's file, as the node gave it): every task that keeps a block checks
    the file so before it plans, and nothing is written then."""
    try:
        blocks.find_block(text or "", name)
    except ValueError as error:
        raise TaskFailed(f"{path}: {error}") from None


__all__ = [
    "Action", "Change", "ConfirmNewConnection", "Context", "Local", "ParamError", "Plan", "Probe",
    "Run", "TaskFailed", "TaskType", "Upload", "Write", "checked", "param_names", "parse_params",
    "whole_block",
]
