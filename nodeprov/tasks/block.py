"""``block``: keep a named, marked block of lines in a text file (like Ansible's blockinfile).

    - name: MOTD notice
      block: {path: /etc/motd, name: notice, lines: ["Managed by nodeprov"]}

Lines outside the block are kept byte for byte; ``state: absent`` removes the block.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Literal

from nodeprov.remote import reader
from nodeprov.tasks.base import (
    Change,
    Context,
    Plan,
    Probe,
    TaskType,
    Write,
    checked,
    whole_block,
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
            checked("lines", partial(blocks.block_line, self.name), line)


def probe(params: BlockParams) -> Probe:
    return reader.read_many_probe(params.path)


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
