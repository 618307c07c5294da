"""The task registry: one line per task type. Adding a task is one module, one line here."""

from __future__ import annotations

from typing import Any

from nodeprov.tasks import block
from nodeprov.tasks.base import TaskType

REGISTRY: dict[str, TaskType[Any]] = {
    task.name: task
    for task in (
        block.TASK,
    )
}
