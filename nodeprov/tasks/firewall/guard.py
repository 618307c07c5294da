"""The firewall task's changes, each run through ufw-helper.sh on the node, and the lockout
guard around those that could cut SSH off (iptables-apply's idea)::

    guard_change(["enable ufw"], [], [("ufw", "--force", "enable")], diff, 30, "tcp/22 from any")
    # write the helper; arm 30; ufw --force enable; confirm a NEW SSH connection; disarm

Armed, the helper's detached guard runs ``ufw --force disable`` after the seconds given unless
the runner, having got a new SSH connection through, disarms it first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from importlib import resources

from nodeprov.remote.nodelock import STATE_DIR
from nodeprov.tasks.base import Action, Change, ConfirmNewConnection, Run, Write

HELPER = f"{STATE_DIR}/ufw-helper.sh"
HELPER_SCRIPT = resources.files("nodeprov.nodeside").joinpath("ufw-helper.sh").read_text()
# A helper command's arguments (``("arm", "30")`` runs ``sh ufw-helper.sh arm 30``), or an action.
Step = tuple[str, ...] | Write | ConfirmNewConnection


def guard_change(parts: list[str], before: Sequence[Step], steps: Sequence[Step], diff: str,
                 seconds: int, ssh: str) -> Change:
    """``before``, then ``steps`` between arming the guard and confirming a new connection."""
    what = "; ".join(parts)
    confirm = ConfirmNewConnection(f"{what}, SSH allowed on {ssh}")
    return helper_change(f"{what} (reverted in {seconds}s unless a new SSH connection works)",
                         [*before, ("arm", str(seconds)), *steps, confirm, ("disarm", ssh)], diff)


def disarm_left_guard(pid: str, ssh: str) -> Change:
    """A run killed between enabling ufw and disarming left its guard waiting to disable ufw:
    disarm it, once a new connection shows that what the killed run did lets SSH in."""
    confirm = ConfirmNewConnection(f"the rules a killed run left, SSH allowed on {ssh}")
    return helper_change(f"disarm the lockout guard an interrupted run left armed (pid {pid})",
                         [confirm, ("disarm", ssh)],
                         f"~ lockout guard (pid {pid}): armed -> disarmed\n")


def helper_change(summary: str, steps: Iterable[Step], diff: str) -> Change:
    """A change whose commands run through the helper script, written first (it is tiny)."""
    actions: list[Action] = [Write(HELPER, HELPER_SCRIPT)]
    actions += [Run(("sh", HELPER, *step)) if isinstance(step, tuple) else step for step in steps]
    return Change(summary, tuple(actions), diff)
