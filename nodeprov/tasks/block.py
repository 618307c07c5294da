"""``block``: keep a named, marked block of lines in a text file (like Ansible's blockinfile).

    - name: MOTD notice
      block: {path: /etc/motd, name: notice, lines: ["Managed by nodeprov"]}

Lines outside the block are kept byte for byte; ``state: absent`` removes the block.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from nodeprov.remote import reader
from nodeprov.tasks.base import (
    Change,
    Context,
    Plan,
    Probe,
    TaskFailed,
    TaskType,
    Write,
    checked,
)
from nodeprov.tasks.textfiles import blocks
from nodeprov.util import validate


@dataclass(frozen=True)
class BlockParams:
    path: str
    name: str = "managed"
    lines: tuple[str, ...] = ()
    state: Literal["present", "absent"] = "present"

    def __post_init__(self) -> None:
        checked("path", validate.absolute_path, self.path)
        checked("name", validate.env_name, self.name.replace("-", "_"))
        for line in self.lines:
            checked("lines", validate.text_value, line)


def probe(params: BlockParams) -> Probe:
    return reader.read_many_probe(params.path)


def whole_block(path: str, text: str | None, name: str) -> None:
    """TaskFailed naming ``path`` and the line where its markers of block ``name`` are not one
    whole block (the node's file, as the node gave it): nothing is written then."""
    try:
        blocks.find_block(text or "", name)
    except ValueError as error:
        raise TaskFailed(f"{path}: {error}") from None


def plan(ctx: Context, params: BlockParams, observed: str) -> Plan:
    old = reader.observed_files(observed).get(params.path)
    whole_block(params.path, old, params.name)
    if params.state == "absent":
        new = blocks.remove_block(old or "", params.name)
        if old is None or new == old:
            return Plan.noop(f"{params.path}: no block {params.name!r}")
        verb = "remove"
    else:
        new = blocks.replace_block(old or "", params.name, params.lines)
        if new == old:
            return Plan.noop(f"{params.path}: block {params.name!r} already has "
                             f"{len(params.lines)} lines")
        verb = "update" if old is not None and blocks.find_block(old, params.name) else "add"
    return Plan.of(Change(f"{verb} block {params.name!r} in {params.path}",
                          (Write(params.path, new),),
                          diff=blocks.unified_diff(params.path, old, new)))


TASK = TaskType("block", "Keep a marked block of lines in a text file", BlockParams, probe, plan)
