"""Which nodes of a ``nodeprov run`` failed by themselves, one line for each saying why, and each
node's exit code: its ranks' own, as each rank's record says (``nodejob.RankEnd``)::

    failed = run_failures(launch, logs.paths, nproc, gpus)  # {"node2": RankFailure(...)}
    cause_order(launch, failed)       # ("node2", "node1"): node2 raised, node1 lost its peer
    lines = failure_lines(launch, failed, logs.paths, seconds=0)
    node = node_run("node1", launch, log, nproc["node1"])   # NodeRun(exit_code=0, ...)

The failing rank's own lines are read first (torchrun's summary and traceback push them out of
the node's tail). A rank that lost its connection after every rank of another node had exited 0
failed only because the script's ranks do not end together: it is said so (``node1's ranks
finished; rank 1 on node2 was still waiting for them``), and node1, whose torchrun nodeprov then
stopped, keeps its ranks' exit code 0.

Which node failed first: a node whose failure is its own (an exception, an error that is not
a lost peer, a node that dropped or never started) comes before every node that only lost its
peer, whatever the nodes' clocks say; the ranks' records order the nodes within each kind.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from nodeprov.job.diagnose import Diagnosis, diagnose
from nodeprov.job.failures import NodeFailure, alike, last_words, node_failures, tail
from nodeprov.job.nodejob import Launch, Stopped
from nodeprov.remote.session import Result
from nodeprov.userjob.ranklog import (
    LOST_PEER,
    RANK_PREFIXES,
    first_rank,
    first_traceback_rank,
    raised,
    rank_lines,
    rank_tail,
    root_cause_rank,
)
from nodeprov.userjob.runreport import FirstFailure, NodeRun, failed_at, first_failed_rank

DEADLINE_HINT = "raise --timeout if the training needs longer"
# A rank's last words when torchrun's agent or a shell stopped it (SIGTERM, as bash says it)
TERMINATED = re.compile(r"\bTerminated\b")
TOGETHER = ("no failure there: let every rank run the same collectives to the end, e.g. a "
            "dist.barrier() before the script returns")


@dataclass(frozen=True)
class RankFailure:
    """A node that failed by itself: its failing rank (from torchrun's summary), that rank's
    last lines (torchrun's own when it names none), the exception the rank raised, else the
    rank's last words when no rule knows them (``error: the following arguments are ...``)."""

    failure: NodeFailure
    rank: int | None
    tail: str
    exception: str | None
    last_words: str | None = None
    lost_peer: bool = False  # it only lost its peer: a cause only where none failed by itself


def finished(launch: Launch, name: str, nproc: int) -> bool:
    """Every rank of the node ended by itself, with 0."""
    found = launch.results.get(name)
    return isinstance(found, Stopped) and len(found.ranks) >= nproc and all(
        end.exit_code == 0 for end in found.ranks.values())


def run_failures(launch: Launch, paths: Mapping[str, Path], nproc: Mapping[str, int],
                 gpus: Mapping[str, int]) -> dict[str, RankFailure]:
    """The nodes that failed by themselves, those whose failure is their own first, then those
    that only lost their peer; within each, nodes without a rank record first (as they ended),
    then as their first rank failed by its record (a peer's torchrun may end before the
    raiser's). A node stopped while its rank's exception or a cause of its own (a rule's: a
    GPU it lacks, its venv) was on its way out counts too.
    After the deadline, every node that ended by itself timed out. ``gpus``: each node's, from
    its facts."""
    done = [name for name in launch.launched if finished(launch, name, nproc[name])]
    failed = {}
    for name in dict.fromkeys([*launch.ended, *launch.launched]):
        result = launch.launched.get(name)
        stopped = name in launch.stopped
        if not isinstance(result, Result) or name in done or (
                result.exit_code == 0 and not stopped):
            continue
        rank = root_cause_rank(tail(result, 10_000))
        if rank is None:
            rank = first_traceback_rank(paths[name])
        said = rank_tail(paths[name], rank) if rank is not None else ""
        if launch.deadline_passed:  # what the ranks said then is the kill's echo, not a cause
            if rank is None:  # still, where a rank was when it was killed, not torchrun's trace
                rank = first_rank(paths[name])
                said = rank_tail(paths[name], rank) if rank is not None else ""
            if not stopped:
                failed[name] = RankFailure(NodeFailure(result, None, at_deadline=True), rank,
                                           said or tail(result), None)
            continue
        if done and not stopped and LOST_PEER.search(said or tail(result)):
            waited = _waiting(said or tail(result), done, rank, name)
            failed[name] = RankFailure(NodeFailure(result, waited), rank, said or tail(result),
                                       None, lost_peer=True)
            continue
        # The failing rank's own words first: a rule on them, else its exception; torchrun's
        # tail (other ranks, the rendezvous) only when the rank says nothing a rule knows.
        found = diagnose(said, name, gpus=gpus.get(name)) if said else None
        exception = raised(rank_lines(paths[name], rank)) if rank is not None and not found \
            else None
        if stopped and (not found.own if found is not None else exception is None):
            continue  # stopped while it ran well, or failing only because a peer did
        if found is None and exception is None:
            found = diagnose(tail(result), name, gpus=gpus.get(name))
        # No rule, no traceback (argparse's usage error, a sys.exit with a message): what the
        # rank itself said last, rather than torchrun's summary.
        failure = NodeFailure(result, found)
        words = last_words("\n".join(RANK_PREFIXES.sub("", line) for line in said.splitlines())
                           ) if said and found is None and exception is None \
            and not failure.timed_out else None
        quoted = exception or (found.evidence if found is not None
                               else words or last_words(said or tail(result)))
        failed[name] = RankFailure(failure, rank, said or tail(result), exception, words,
                                   _lost_peer(launch, name, failure, quoted, exception))
    return dict(sorted(failed.items(), key=lambda item: _order(launch, *item)))


def _order(launch: Launch, name: str, failure: RankFailure) -> tuple[bool, bool, float]:
    """Causes first, whatever the clocks say; then untimed (no rank record), then by the first
    failing rank's end on its node's clock."""
    found = launch.results.get(name)
    when = failed_at(found.ranks) if isinstance(found, Stopped) else None
    return failure.lost_peer, when is not None, when or 0.0


def _lost_peer(launch: Launch, name: str, failure: NodeFailure, quoted: str,
               exception: str | None) -> bool:
    """Whether the node only lost its peer: no rule found a cause of its own, and the words its
    line quotes say a connection closed ("Connection closed by peer", "Terminated"), or its
    first failing rank, which raised nothing, was killed by a signal (a stop, not a cause)."""
    if failure.timed_out or (failure.diagnosis is not None and failure.diagnosis.own):
        return False
    found = launch.results.get(name)
    ranks = found.ranks if isinstance(found, Stopped) else {}
    rank = first_failed_rank(ranks)
    return bool(LOST_PEER.search(quoted) or TERMINATED.search(quoted)) or (
        exception is None and rank is not None and ranks[rank].exit_code < 0)


def cause_order(launch: Launch, failed: Mapping[str, RankFailure]) -> tuple[str, ...]:
    """Every failing node, the first cause first: the nodes nodeprov could not prepare or whose
    session failed (their own failure, with no record), then ``failed`` (``run_failures``'s
    order). The closing line, the JSON's first_failure and the diagnosis all follow it."""
    dropped = [name for name, result in launch.launched.items() if isinstance(result, Exception)]
    return (*launch.prepare_errors, *dropped, *failed)


def first_failure(launch: Launch, failed: Mapping[str, RankFailure]) -> FirstFailure | None:
    """The node ``cause_order`` puts first and the lines to read: its failing rank's, or why
    nodeprov could not run the job there."""
    name = next(iter(cause_order(launch, failed)), None)
    if name is None or name in failed:
        return None if name is None else FirstFailure(name, failed[name].rank, failed[name].tail)
    return FirstFailure(name, None, str(launch.prepare_errors.get(name)
                                        or launch.launched[name]))


def _waiting(said: str, done: Sequence[str], rank: int | None, name: str) -> Diagnosis:
    who = f"{done[0]}'s ranks" if len(done) == 1 else f"the ranks of {', '.join(done)}"
    found = LOST_PEER.search(said)
    evidence = diagnose(said, name) or Diagnosis("job", "", "", found[0] if found else "")
    rank_of = f"rank {rank} on {name}" if rank is not None else f"a rank on {name}"
    return replace(evidence, item="job", cause=f"{who} finished (exit 0); {rank_of} was still "
                   "waiting for them", fix_template=TOGETHER)


def failure_lines(launch: Launch, failed: Mapping[str, RankFailure], paths: Mapping[str, Path],
                  *, seconds: int) -> list[str]:
    """One line per failing node: a rule's diagnosis, else the exception its rank raised,
    else what torchrun last said, in ``cause_order``; then the nodes the stop step could not
    reach."""
    lines = [f"{name}: job: cannot prepare the node: {error}"
             for name, error in launch.prepare_errors.items()]
    raisers = alike({name: (each.exception,) for name, each in failed.items()
                      if each.exception is not None})
    lines += [f"{_who(names)}: job: {_ranks(failed, names)} raised {failed[name].exception} (an "
              f"error in the script; {_whose(failed, names)}traceback is in {paths[name]})"
              for name, names in raisers.items()]
    quoted = alike({name: (_rank_code(launch, name, each.rank), each.last_words)
                     for name, each in failed.items() if each.last_words is not None})
    lines += [f"{_who(names)}: job: {_ranks(failed, names)} exited"
              f"{_rank_code(launch, name, failed[name].rank)}; its last line: "
              f"{failed[name].last_words} ({_whose(failed, names)}output is in {paths[name]})"
              for name, names in quoted.items()]
    others = {name: each.failure for name, each in failed.items()
              if each.exception is None and each.last_words is None}
    lines += node_failures({n: r for n, r in launch.launched.items()
                            if isinstance(r, Exception) or n in others},
                           others, seconds=seconds, deadline_hint=DEADLINE_HINT)
    order = cause_order(launch, failed)
    first = {name: at for at, name in enumerate(order)}
    lines.sort(key=lambda line: first.get(line.partition(": ")[0].split(", ")[0], len(order)))
    return lines + [f"{name}: job: could not stop the job: {error}"
                    for name, error in launch.results.items() if isinstance(error, Exception)]


def _who(names: Sequence[str]) -> str:
    return ", ".join(names)


def _ranks(failed: Mapping[str, RankFailure], names: Sequence[str]) -> str:
    """``rank 2`` on one node; ``a rank on each`` of several (their numbers would be a list as
    long as the nodes')."""
    return f"rank {failed[names[0]].rank}" if len(names) == 1 else "a rank on each"


def _whose(failed: Mapping[str, RankFailure], names: Sequence[str]) -> str:
    """Whose log the line names: ``its `` on one node, ``rank 2's `` (the first) on several."""
    return "its " if len(names) == 1 else f"rank {failed[names[0]].rank}'s "


def _rank_code(launch: Launch, name: str, rank: int | None) -> str:
    """`` 2``: the rank's own exit code where its record says; empty where none does."""
    found = launch.results.get(name)
    end = found.ranks.get(rank) if isinstance(found, Stopped) and rank is not None else None
    return f" {end.exit_code}" if end is not None else ""


def node_run(name: str, launch: Launch, log: Path, nproc: int) -> NodeRun:
    """The node's exit code is its ranks' own once every rank has a record (the first that is
    not 0; -N: signal N), else its launcher's (torchrun's, or 128+N after signal N). Stopped:
    nodeprov stopped the node while a rank still ran."""
    result = launch.launched.get(name)
    found = launch.results.get(name)
    ranks = found.ranks if isinstance(found, Stopped) else {}
    recorded = len(ranks) >= nproc
    code = result.exit_code if isinstance(result, Result) else None
    if code is not None and recorded:
        code = next((end.exit_code for _, end in sorted(ranks.items()) if end.exit_code), 0)
    ended = recorded and all(end.exit_code >= 0 for end in ranks.values())
    return NodeRun(code, launch.durations.get(name, 0.0), name in launch.stopped and not ended,
                   str(log), error=str(result) if isinstance(result, Exception) else "",
                   nproc=nproc, ranks=ranks)
