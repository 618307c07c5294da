"""``--list-hosts`` and ``--list-tasks``: what a run would touch, read from the inventory and
the playbook alone (no connection), in ansible-playbook's layout::

    print_listing(console, playbook, targets, hosts=True, tasks=False, only=..., skip=...)
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console

from nodeprov.inventory import Host
from nodeprov.playbook import Playbook
from nodeprov.playbook.tags import selected
from nodeprov.util.validate import printable


def _tags(tags: Sequence[str]) -> str:
    return f"TAGS: [{', '.join(tags)}]"


def listing_lines(playbook: Playbook, targets: Sequence[Host], *, hosts: bool, tasks: bool,
                  only: frozenset[str], skip: frozenset[str]) -> list[str]:
    """The lines of the listing: per play its hosts (after --limit) and/or the tasks that
    --tags and --skip-tags leave, the job included."""
    names = {host.name for host in targets}
    lines = [f"playbook: {playbook.path}"]
    for number, play in enumerate(playbook.plays, start=1):
        play_hosts = [host.name for host in play.hosts if host.name in names]
        lines += ["", f"  play #{number} ({play.pattern}): {play.name}"]
        if hosts:
            lines.append(f"    pattern: {play.pattern}")
            lines.append(f"    hosts ({len(play_hosts)}):")
            lines += [f"      {name}" for name in play_hosts]
        if tasks:
            lines.append("    tasks:")
            lines += [f"      {spec.name}  {_tags(spec.tags)}" for spec in play.tasks
                      if selected(spec.tags, only, skip)]
            if play.job is not None and selected(play.job.tags, only, skip):
                lines.append(f"      verification job (matrix, torchrun)  {_tags(play.job.tags)}")
    return lines


def print_listing(console: Console, playbook: Playbook, targets: Sequence[Host], *, hosts: bool,
                  tasks: bool, only: frozenset[str], skip: frozenset[str]) -> None:
    for line in listing_lines(playbook, targets, hosts=hosts, tasks=tasks, only=only, skip=skip):
        # a playbook's names and tags are the user's text: escapes spelled out, as elsewhere
        console.print(printable(line), markup=False, highlight=False)
