"""Run a playbook play by play in the batches of each play's ``serial:`` (``playbook.serial``),
stopping when a batch fails as ``max_fail_percentage:`` (or a wholly failed batch) says::

    rolled = run_rolling(playbook, inventory, targets, options, reporter, sessions)
    rolled.batches    # [Batch(play='Upgrade', number=1, hosts=('node1',), failed=()), ...]
    rolled.stopped    # None, or why no later batch ran

A playbook without ``serial:`` or ``max_fail_percentage:`` runs in one pass, every play's tasks
for every host (one connection and one round trip per host when nothing changes).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nodeprov.engine.outcome import HostResult, Interrupted, PlaybookOutcome, Reporter
from nodeprov.engine.runner import RunOptions, run_playbook
from nodeprov.inventory import Host, Inventory
from nodeprov.playbook import Play, Playbook
from nodeprov.playbook.serial import split_batches, stop_reason
from nodeprov.playbook.tags import selected
from nodeprov.remote.facts import Facts
from nodeprov.remote.session import Session

FAILED = ("failed", "unreachable")


@dataclass(frozen=True)
class Batch:
    play: str
    number: int  # from 1, within its play
    hosts: tuple[str, ...]
    failed: tuple[str, ...]


@dataclass(frozen=True)
class Rolled:
    run: PlaybookOutcome
    batches: tuple[Batch, ...]
    stopped: str | None = None  # why the run stopped before the last batch


def run_rolling(playbook: Playbook, inventory: Inventory, targets: Sequence[Host],
                options: RunOptions, reporter: Reporter,
                sessions: Mapping[str, Session]) -> Rolled:
    """run_playbook, in batches where a play asks for them; Interrupted carries every host's
    outcome so far."""
    names = {host.name for host in targets}
    if not any(play.serial or play.max_fail_percentage is not None for play in playbook.plays):
        run = run_playbook(playbook, inventory, targets, options, reporter, sessions)
        broken = {result.name for result in run.results if result.status in FAILED}
        return Rolled(run, tuple(
            Batch(play.name, 1, hosts, tuple(n for n in hosts if n in broken))
            for play in playbook.plays if _has_tasks(play, options)
            for hosts in [tuple(h.name for h in play.hosts if h.name in names)]))
    merged: dict[str, HostResult] = {}
    facts: dict[str, Facts | None] = {}
    batches: list[Batch] = []
    for play in playbook.plays:
        hosts = [h for h in play.hosts if h.name in names
                 and (h.name not in merged or merged[h.name].status not in FAILED)]
        for number, batch in enumerate(split_batches(play.serial, hosts), start=1):
            single = dataclasses.replace(playbook, plays=(play,))
            try:
                run = run_playbook(single, inventory, batch, options, reporter, sessions, facts)
            except Interrupted as stopped:
                _merge(merged, facts, stopped.outcome)
                raise Interrupted(PlaybookOutcome(list(merged.values()), facts)) from None
            _merge(merged, facts, run)
            if not _has_tasks(play, options):
                continue  # it ran for the facts only (a job: play)
            failed = tuple(h.name for h in batch if merged[h.name].status in FAILED)
            batches.append(Batch(play.name, number, tuple(h.name for h in batch), failed))
            reason = stop_reason(
                batch_size=len(batch), failed=sum(merged[n].status == "failed" for n in failed),
                unreachable=sum(merged[n].status == "unreachable" for n in failed),
                max_fail_percentage=play.max_fail_percentage)
            if reason:
                return Rolled(PlaybookOutcome(list(merged.values()), facts), tuple(batches),
                              f"play {play.name!r}, batch {number}: {reason}")
    return Rolled(PlaybookOutcome(list(merged.values()), facts), tuple(batches))


def _has_tasks(play: Play, options: RunOptions) -> bool:
    return any(selected(spec.tags, options.tags, options.skip_tags) for spec in play.tasks)


def _merge(merged: dict[str, HostResult], facts: dict[str, Facts | None],
           run: PlaybookOutcome) -> None:
    """One result per host over the plays and batches it ran in."""
    facts.update({name: found for name, found in run.facts.items()
                  if found is not None or name not in facts})
    for result in run.results:
        before = merged.get(result.name)
        if before is None:
            merged[result.name] = result
            continue
        before.tasks += result.tasks
        before.duration += result.duration
        before.round_trips, before.connections = result.round_trips, result.connections
        before.facts = result.facts or before.facts
        if result.status != "ok" and before.status not in FAILED:
            before.status, before.error = result.status, result.error
