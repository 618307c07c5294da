"""A busy node's job lock named on this side (issue #34): the launcher says only that the node
is busy (exit 75); nodeprov then runs lockholder.py on that node, as the same user, and the
line it prints, the kernel's words first, completes the launcher's."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nodeprov.job.nodejob import LOCKHOLDER, Job, _start
from nodeprov.remote.session import Result

HELD = "another nodeprov job is running on this node"
NAMED = 'pid 4242 of nobody (uid 65534): python3 squat.py; it says: "run x of root"'


class BusyNode:
    """A session whose launcher finds the lock held; it records what else it was asked."""

    def __init__(self, lockholder: Result) -> None:
        self.lockholder, self.ran = lockholder, list[tuple[Sequence[str], bool]]()

    def converse(self, argv: Sequence[str], token: str, *_: Any, **options: Any) -> Result:
        return Result("", f"{token}\n{HELD}\n", 75)

    def run(self, argv: Sequence[str], **options: Any) -> Result:
        self.ran.append((argv, options["as_login"]))
        return self.lockholder


def test_the_holder_is_named_by_lockholder_as_the_jobs_own_user() -> None:
    node = BusyNode(Result(NAMED + "\n", "", 0))
    job = Job("nodeprov-1", {"node1": ["true"]}, as_login={"node1": True})
    result = _start(node, job, "node1", "", 60, None)  # type: ignore[arg-type]
    assert result.exit_code == 75
    assert result.stderr.splitlines()[-1] == f"{HELD} ({NAMED})"
    assert node.ran == [(("python3", "-I", "-c", LOCKHOLDER), True)]


def test_a_holder_that_cannot_be_named_is_said_so() -> None:
    node = BusyNode(Result("", "python3: not found\n", 127))
    job = Job("nodeprov-1", {"node1": ["true"]})
    result = _start(node, job, "node1", "", 60, None)  # type: ignore[arg-type]
    assert result.stderr.splitlines()[-1] == f"{HELD} (its holder could not be named)"
