"""The task registry: one line per task type. Adding a task is one module, one line here."""

from __future__ import annotations

from typing import Any

from nodeprov.tasks import block, firewall, hosts, ipv6, nccl_env, sysctl, torch, venv
from nodeprov.tasks.base import TaskType

REGISTRY: dict[str, TaskType[Any]] = {
    task.name: task
    for task in (
        block.TASK,
        hosts.TASK,
        ipv6.TASK,
        sysctl.TASK,
        nccl_env.TASK,
        firewall.TASK,
        venv.TASK,
        torch.TASK,
    )
}
