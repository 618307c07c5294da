"""What task tests share: facts with defaults, a one-node Context, and plan_task.

    result = plan_task(sysctl.TASK, {"settings": {"net.core.somaxconn": 8192}},
                       {"/proc/sys/net/core/somaxconn": "4096\\n"})
    facts = make_facts(ufw_active=True)    # every other fact as the recorded Debian 12 VM's

The facts are parsed from a recorded ``facts.sh`` run (tests/data/facts/debian12-vm.txt), so a
fact added to Facts and its parser reaches every test without editing each one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nodeprov.inventory import Host
from nodeprov.remote import reader
from nodeprov.remote.facts import Facts, parse_facts, split_sections
from nodeprov.tasks.base import Context, Plan, TaskType, parse_params

RECORDED_FACTS = Path(__file__).parents[1] / "data" / "facts" / "debian12-vm.txt"
RECORDED = parse_facts(split_sections(RECORDED_FACTS.read_text(), "TOKEN123"))
# the recorded VM's address (its eth0 holds 192.0.2.2/24)
HOST = Host("node1", "192.0.2.2", "192.0.2.2")


def make_facts(**changes: Any) -> Facts:
    """The recorded Debian 12 VM's facts, with ``changes``."""
    return dataclasses.replace(RECORDED, **changes)


def one_node(facts: Facts | None = None, host: Host = HOST) -> Context:
    """What a task sees on a cluster of this one node."""
    facts = facts or RECORDED
    return Context(host, facts, {host.name: (host, facts)})


def plan_task(task: TaskType[Any], raw: Mapping[str, Any],
              observed: str | Mapping[str, str | None], *, context: Context | None = None
              ) -> Plan:
    """The task's plan for parameters as a playbook gives them (``parse_params`` checks them)
    and what its probe printed, or {path: text or None} for a probe reading files."""
    output = observed if isinstance(observed, str) else reader.files_output(dict(observed))
    return task.plan(context or one_node(), parse_params(task.params, raw), output)
