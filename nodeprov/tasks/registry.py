"""The task registry: one line per task type, and the handler of each room whose own actions
the engine cannot run alone (``nodeprov.remote.handlers``). docs/writing-a-task.md lists what
else a new task touches."""

from __future__ import annotations

from typing import Any

from nodeprov.remote.handlers import AnyHandler
from nodeprov.tasks import (
    block,
    firewall,
    hosts,
    ipv6,
    memlock,
    nccl_env,
    nccl_fabric,
    peermem,
    sysctl,
    torch,
    venv,
)
from nodeprov.tasks.base import TaskType
from nodeprov.wheels import handler as wheels

REGISTRY: dict[str, TaskType[Any]] = {
    task.name: task
    for task in (
        block.TASK,
        hosts.TASK,
        ipv6.TASK,
        sysctl.TASK,
        nccl_env.TASK,
        nccl_fabric.TASK,
        memlock.TASK,
        peermem.TASK,
        firewall.TASK,
        venv.TASK,
        torch.TASK,
    )
}

ACTION_HANDLERS: tuple[AnyHandler, ...] = (wheels.HANDLER,)
