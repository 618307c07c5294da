"""Which nodes of a job failed by themselves, and one line for each saying why.

    failed = failed_nodes(launch.launched, launch.stopped, launch.deadline_passed)  # diagnosed
    for line in node_failures(launch.launched, failed, seconds=120, deadline_hint="..."):
        print(line)    # node3: firewall: gloo peers could not connect: ... (fix); the job said: ...

Nodes the launcher stopped because another failed are not failures: only the first ones are.
After the deadline, a node's failure is the deadline's, whatever its output says.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass

from nodeprov.errors import HostError
from nodeprov.job.diagnose import Diagnosis, diagnose_nodes
from nodeprov.job.nodejob import TIMED_OUT
from nodeprov.remote.session import Result
from nodeprov.remote.transfer import describe

TAIL_LINES = 40
NETWORK_ITEMS = ("firewall", "hosts")  # diagnosis items the connectivity matrix can pin down


def tail(result: Result, lines: int = TAIL_LINES) -> str:
    """The last ``lines`` of a command's output, stdout first (torchrun logs to stderr)."""
    text = "\n".join(part.rstrip("\n") for part in (result.stdout, result.stderr) if part.strip())
    return "\n".join(text.splitlines()[-lines:])


def last_words(output: str) -> str:
    """The last line that says something: torchrun's failure summary ends in a rule of ``=``.

    >>> last_words("  traceback : Signal 6 (SIGABRT) received by PID 7\\n=====\\n")
    'traceback : Signal 6 (SIGABRT) received by PID 7'
    """
    said = (line.strip() for line in reversed(output.splitlines()))
    return next((line for line in said if line.strip("=-")), "no output")


@dataclass(frozen=True)
class NodeFailure:
    """A node whose torchrun failed by itself, what a rule made of its output tail, and whether
    it ended at the deadline (killed there, or failing because a peer just was)."""

    result: Result
    diagnosis: Diagnosis | None
    at_deadline: bool = False

    @property
    def timed_out(self) -> bool:
        """Killed at the deadline: no rule explains it, and its exit or timing says so."""
        return self.at_deadline or (self.diagnosis is None and self.result.exit_code in TIMED_OUT)


def failed_nodes(launched: Mapping[str, Result | Exception], stopped: set[str],
                 deadline_passed: bool = False) -> dict[str, NodeFailure]:
    """The nodes whose torchrun failed by itself (not those the launcher stopped), diagnosed
    unless the deadline passed first."""
    failed = {name: outcome for name, outcome in launched.items() if isinstance(outcome, Result)
              and outcome.exit_code != 0 and name not in stopped}
    if deadline_passed:
        return {name: NodeFailure(result, None, at_deadline=True)
                for name, result in failed.items()}
    diagnosed = dict(diagnose_nodes({name: tail(result) for name, result in failed.items()}))
    return {name: NodeFailure(result, diagnosed.get(name)) for name, result in failed.items()}


def error_line(name: str, task: str, error: BaseException) -> str:
    """``NODE: TASK: what went wrong``, said once: a HostError names its node and task itself.

    >>> error_line("node1", "job", HostError("node1", "job", "connection lost"))
    'node1: job: connection lost'
    >>> error_line("node1", "sync", OSError("Socket is closed"))
    'node1: sync: Socket is closed'
    """
    return str(error) if isinstance(error, HostError) else f"{name}: {task}: {describe(error)}"


def node_failures(launched: Mapping[str, Result | Exception], failed: Mapping[str, NodeFailure],
                  *, seconds: int, deadline_hint: str) -> list[str]:
    """One line per node that could not be reached or failed by itself: the diagnosis where a
    rule knows the output, else what torchrun last said; ``deadline_hint`` follows a kill at
    the deadline. Nodes that failed alike (the same cause and fix, or the deadline) share one
    line, named together: ``node1, node2, node3: job: ...``."""
    lines = [error_line(name, "job", outcome) for name, outcome in launched.items()
             if isinstance(outcome, Exception)]
    groups = _failed_alike(failed)
    for name, failure in failed.items():
        result, found, names = failure.result, failure.diagnosis, groups.get(name)
        if names is None:
            continue  # said on the line of the first node that failed alike
        who = ", ".join(names)
        if failure.timed_out:
            lines.append(f"{who}: job: still running after {seconds} s, killed on every node "
                         f"({deadline_hint})")
        elif found is not None:
            said = "the job said" if len(names) == 1 else f"the job said on {name}"
            lines.append(f"{who}: {found.item}: {found.cause} ({found.fix_for(names)}); {said}: "
                         f"{found.evidence}")
        else:
            lines.append(f"{name}: job: torchrun exited {result.exit_code}: "
                         f"{last_words(tail(result))}")
    return lines


def alike(keys: Mapping[str, Hashable]) -> dict[str, list[str]]:
    """The nodes whose failures have the same key, under the first of them: 128 nodes that
    failed the same way are one line, not 128.

    >>> alike({"node1": "no torch", "node2": "no GPU", "node3": "no torch"})
    {'node1': ['node1', 'node3'], 'node2': ['node2']}
    """
    groups: dict[Hashable, list[str]] = {}
    for name, key in keys.items():
        groups.setdefault(key, []).append(name)
    return {names[0]: names for names in groups.values()}


def _failed_alike(failed: Mapping[str, NodeFailure]) -> dict[str, list[str]]:
    """``alike`` by cause and fix, or the deadline; a node no rule explained is a group of its
    own (its last words are its own)."""
    def key(name: str, failure: NodeFailure) -> Hashable:
        found = failure.diagnosis
        return ("deadline",) if failure.timed_out else (
            (found.item, found.cause, found.fix_template) if found is not None else name)

    return alike({name: key(name, failure) for name, failure in failed.items()})


def network_may_explain(failed: Mapping[str, NodeFailure]) -> bool:
    """Whether a node failed in a way the network between nodes may explain: a diagnosed
    firewall or name problem, or a failure no rule knows (a peer that closed the rendezvous, a
    hung collective). A missing torch or a busy node is explained without the matrix."""
    return any(f.diagnosis is None or f.diagnosis.item in NETWORK_ITEMS for f in failed.values())
