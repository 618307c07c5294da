"""--tags and --skip-tags: which tasks (and plays' jobs) a run selects by their tags, as
Ansible selects them::

    only, skip = tag_set("firewall,hosts"), tag_set("job")
    selected(("firewall",), only, skip)    # True
"""

from __future__ import annotations

from collections.abc import Sequence


def selected(tags: Sequence[str], only: frozenset[str], skip: frozenset[str]) -> bool:
    """Whether a task (or a play's job) with ``tags`` runs under --tags ``only`` and
    --skip-tags ``skip``, as in Ansible: skip wins."""
    return not (only and not only & set(tags)) and not skip & set(tags)


def tag_set(tags: str | None) -> frozenset[str]:
    """
    >>> sorted(tag_set("job, hosts,"))
    ['hosts', 'job']
    """
    return frozenset(t.strip() for t in tags.split(",") if t.strip()) if tags else frozenset()
