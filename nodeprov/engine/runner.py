"""The runner: connects to every host in parallel, plans each task just before it runs, acts.

    run = run_playbook(playbook, inventory, targets, RunOptions(check=True), reporter, sessions)

Phase 1 opens one SSH connection per inventory host and reads facts and every task's probe in
one round trip (hosts outside ``--limit`` give facts only: the hosts task lists every node;
a later batch of a rolling run, ``nodeprov.engine.rolling``, reads only its own hosts again).
Phase 2 walks each target host's tasks in order: plan, then (unless ``check``) execute; the
facts and the remaining probes are read again in the round trip of a task's changes, right
after them, so each plan sees what earlier tasks did. A failure stops that host's remaining
tasks, never other hosts.

Unless ``check``, each target host plans and acts under the node's run lock, held until its
last task: a second apply on the same node waits, then plans from what the first one left.
Phase 1 takes the lock only if it is free, so two runs never wait on each other's hosts; a host
that found it busy waits for it in phase 2, then reads its probes again.

Ctrl-C lets each host finish the round trip in flight, stops it before its next task, and
raises Interrupted with the outcome so far; a second Ctrl-C drops the connections at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodeprov.engine.handlers import ActionTable
from nodeprov.engine.node_address import with_node_addresses
from nodeprov.engine.outcome import HostResult, Interrupted, PlaybookOutcome, Reporter, TaskResult
from nodeprov.errors import HostError, InputError, NodeprovError, Unreachable
from nodeprov.inventory import Host, Inventory
from nodeprov.playbook import Playbook, TaskSpec
from nodeprov.playbook.tags import selected
from nodeprov.remote.actions import Probe
from nodeprov.remote.facts import Facts
from nodeprov.remote.options import SshOptions
from nodeprov.remote.session import Session
from nodeprov.tasks.base import Context, Plan
from nodeprov.tasks.registry import ACTION_HANDLERS
from nodeprov.util.fanout import DEFAULT_FORKS, on_every, raise_first


@dataclass(frozen=True)
class RunOptions:
    check: bool = False
    forks: int = DEFAULT_FORKS
    tags: frozenset[str] = frozenset()
    skip_tags: frozenset[str] = frozenset()
    ssh: SshOptions = field(default_factory=SshOptions)
    # when the command began: each task's start_s counts from it, over every play and batch
    began: float = field(default_factory=time.monotonic)


@dataclass(frozen=True)
class _Run:
    """What every host's tasks share in one run: read once, passed whole to each host."""

    inventory: Inventory
    options: RunOptions
    reporter: Reporter
    stop: threading.Event
    handlers: ActionTable
    cluster: Mapping[str, tuple[Host, Facts | None]]  # every host, node_address read


@dataclass
class _HostRun:
    """A target host's tasks with their parameters rendered (None until facts are known)."""

    host: Host
    specs: list[TaskSpec]
    params: list[Any]


def host_tasks(playbook: Playbook, inventory: Inventory, targets: Sequence[Host],
               options: RunOptions) -> dict[str, _HostRun]:
    """Each target host's tasks in playbook order, with parameters that need no facts."""
    runs = {host.name: _HostRun(host, [], []) for host in targets}
    for play in playbook.plays:
        for host in play.hosts:
            if host.name not in runs:
                continue
            for spec in play.tasks:
                if not selected(spec.tags, options.tags, options.skip_tags):
                    continue
                runs[host.name].specs.append(spec)
                runs[host.name].params.append(
                    None if spec.needs_facts else spec.params_for(host, inventory.groups, None))
    return {name: run for name, run in runs.items() if run.specs}


def run_playbook(playbook: Playbook, inventory: Inventory, targets: Sequence[Host],
                 options: RunOptions, reporter: Reporter, sessions: Mapping[str, Session],
                 known: Mapping[str, Facts | None] | None = None) -> PlaybookOutcome:
    """Run the tasks; ``sessions`` (one per inventory host, opened here) stay open for the
    caller, who closes them (the verification job reuses them). ``known``: what an earlier
    batch read (None: the host could not be read); those hosts are not read again unless
    targeted, and only those that could not be read are connected again."""
    runs = host_tasks(playbook, inventory, targets, options)
    known = known or {}
    results = {host.name: HostResult(host.name, facts=known.get(host.name))
               for host in inventory.hosts}
    observed: dict[str, list[str | None]] = {}
    started = time.monotonic()
    stop = threading.Event()
    handlers = ActionTable(ACTION_HANDLERS)

    def connect_and_gather(host: Host) -> None:
        session, result = sessions[host.name], results[host.name]
        run = runs.get(host.name)
        probes = [_probe(run, index) for index in range(len(run.specs))] if run else []
        if stop.is_set():
            result.status, result.error = "failed", f"{host.name}: interrupted before connecting"
            return
        try:
            if known.get(host.name) is None:
                session.open()
            try_lock = 0.0 if run is not None and not options.check else None
            result.facts, outputs = session.gather(probes, lock_wait=try_lock)
            observed[host.name] = [out if probe else None
                                   for out, probe in zip(outputs, probes, strict=True)]
        except Unreachable as error:
            result.status, result.error = "unreachable", str(error)
        except HostError as error:
            result.status, result.error = "failed", str(error)

    def apply_host(run: _HostRun) -> None:
        result = results[run.host.name]
        if result.error is None:
            _apply_tasks(run, sessions[run.host.name], result, observed[run.host.name],
                         shared)
        # now, not when the caller closes: two runs must not wait on each other's other hosts
        sessions[run.host.name].unlock()
        result.duration = time.monotonic() - started
        result.connections = sessions[run.host.name].connections
        result.round_trips = sessions[run.host.name].round_trips
        reporter.host_done(result)

    def drop() -> None:  # a second Ctrl-C: the connections under the round trips in flight
        for session in sessions.values():
            session.disconnect("interrupted (Ctrl-C twice)")

    raise_first(on_every(connect_and_gather, [h for h in inventory.hosts
                                              if h.name in runs or h.name not in known],
                         forks=options.forks, stop=stop, drop=drop))
    hosts, problems = with_node_addresses(
        inventory.hosts, {name: result.facts for name, result in results.items()})
    cluster = {h.name: (h, results[h.name].facts) for h in hosts}
    shared = _Run(inventory, options, reporter, stop, handlers, cluster)
    for name, problem in problems.items():
        results[name].status, results[name].error = "failed", problem
    try:
        raise_first(on_every(apply_host, runs.values(), forks=options.forks, stop=stop,
                             drop=drop))
    finally:
        handlers.close()  # nothing a room started outlives the run (no node serves wheels)
    probed = {name: {spec.type.name: out for spec, out in reversed(list(zip(
        runs[name].specs, outputs, strict=True))) if out is not None}
        for name, outputs in observed.items() if name in runs}
    outcome = PlaybookOutcome([results[name] for name in runs],
                         {name: result.facts for name, result in results.items()}, probed)
    if stop.is_set():
        raise Interrupted(outcome)
    return outcome


def _probe(run: _HostRun, index: int) -> Probe | None:
    params = run.params[index]
    return None if params is None else run.specs[index].type.probe(params)


def _apply_tasks(run: _HostRun, session: Session, result: HostResult,
                 observed: list[str | None], shared: _Run) -> None:
    facts = result.facts
    assert facts is not None
    options, cluster, handlers = shared.options, shared.cluster, shared.handlers
    check = options.check
    # the lock was busy in phase 1: wait for it, and read again what the other run changed
    stale = not check and not session.locked
    for index, spec in enumerate(run.specs):
        if shared.stop.is_set():
            result.status = "failed"
            result.error = f"{run.host.name}: interrupted before task {spec.name!r}"
            result.tasks.extend(TaskResult(s.name, s.type.name, "skipped")
                                for s in run.specs[index:])
            return
        started = time.monotonic()
        task = TaskResult(spec.name, spec.type.name, "ok",
                          start_s=round(started - options.began, 3))
        try:
            if spec.needs_facts:
                run.params[index] = spec.params_for(run.host, shared.inventory.groups, facts)
            if stale or observed[index] is None:
                probes = _probes_from(run, index)
                wait = None if check or session.locked else options.ssh.lock_timeout
                facts, outputs = session.gather(probes, lock_wait=wait)
                _observe(observed, probes, outputs)
                stale = False
            host = cluster[run.host.name][0]  # node_address read from the node where need be
            context = Context(host, facts, cluster, handlers.states)
            plan = spec.type.plan(context, run.params[index], observed[index] or "")
            _record_plan(task, plan)
            conflicts = plan.conflicts
            if plan.changes and not check:
                # the changes in one go, then the facts, this task's probe and the next tasks'
                # read again in the same round trip: what the changes left can warn (uv that
                # did not run, so pip installed)
                probes = _probes_from(run, index)
                read = handlers.execute(
                    session, spec.type.name,
                    [action for change in plan.changes for action in change.actions],
                    then_read=probes)
                task.warnings += handlers.warnings_for(run.host.name)
                stale = read is None
                if read is not None:
                    facts, outputs = read
                    _observe(observed, probes, outputs)
                    after = spec.type.plan(Context(host, facts, cluster, handlers.states),
                                           run.params[index], observed[index] or "")
                    task.warnings += [w for w in after.warnings if w not in task.warnings]
                    conflicts = after.conflicts
            if conflicts:  # what the user must remove; the host's other tasks still run
                task.status, task.conflicted = "failed", True
                task.error = f"{run.host.name}: {spec.type.name}: {'; '.join(conflicts)}"
        except (HostError, InputError) as error:  # these name the node and item themselves
            task.status, task.error = "failed", str(error)
        except NodeprovError as error:  # TaskFailed, ParamError, ...: the plan's own words
            task.status, task.error = "failed", f"{run.host.name}: {spec.type.name}: {error}"
        except Exception as error:  # a bug in a task must not take other hosts down
            task.status = "failed"
            task.error = (f"{run.host.name}: {spec.type.name}: internal error "
                          f"{type(error).__name__}: {error} (please report this)")
        # what the wheels' fast paths did instead (uv, a peer, the wheelhouse), failed or not
        task.warnings[:0] = handlers.warnings_for(run.host.name)
        task.duration = time.monotonic() - started
        result.tasks.append(task)
        shared.reporter.task_done(run.host.name, task)
        if task.status == "failed":
            result.status, result.error = "failed", result.error or task.error
            if task.conflicted:
                continue
            skipped = run.specs[index + 1:]
            result.tasks.extend(TaskResult(s.name, s.type.name, "skipped") for s in skipped)
            return
        if task.status == "changed" and result.status != "failed":
            result.status = "changed"


def _probes_from(run: _HostRun, first: int) -> list[Probe | None]:
    """The probes of tasks ``first`` on whose parameters are known (None for the others)."""
    return [_probe(run, i) if i >= first else None for i in range(len(run.specs))]


def _observe(observed: list[str | None], probes: Sequence[Probe | None],
             outputs: Sequence[str]) -> None:
    """Keep what the probes read; a task whose probe was not known (its parameters need the
    facts) stays None, so it is read at its turn."""
    for index, probe in enumerate(probes):
        if probe is not None:
            observed[index] = outputs[index]


def _record_plan(task: TaskResult, plan: Plan) -> None:
    task.notes, task.warnings = list(plan.notes), list(plan.warnings)
    if plan.changes:
        task.status = "changed"
        task.changes = [change.summary for change in plan.changes]
        task.diffs = [change.diff for change in plan.changes if change.diff]
