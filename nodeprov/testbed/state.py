"""The state file: everything `up` made, written before it is made, so `down` removes just that.

    state = State.load(layout.state_file)
    state.member("node1").init      # ProcessId(pid=4242, start_time=817263)

Besides what is listed here, `up` makes only the overlay and tmpfs mounts, which live in each
node's mount namespace and vanish with it, and the bridge's connected route to ``subnet``, which
vanishes with the bridge. It changes no sysctl of the machine.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from nodeprov.errors import InputError
from nodeprov.testbed.processes import ProcessId

FORMAT_VERSION = 1


@dataclass
class Member:
    """A node or the outsider: its namespace, its link, its address, and for a node its PIDs."""

    name: str
    address: str  # with prefix length, as on its eth0: "10.77.3.2/24"
    netns: str
    veth: str
    init: ProcessId | None = None  # PID 1 of the node's namespaces (sshd, once started)
    launcher: ProcessId | None = None  # the `unshare` process waiting on that PID 1

    @property
    def ip(self) -> str:
        return self.address.split("/")[0]

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Member:
        processes = {key: ProcessId(**data[key]) if data.get(key) else None
                     for key in ("init", "launcher")}
        return cls(data["name"], data["address"], data["netns"], data["veth"], **processes)


@dataclass
class State:
    dir: str
    created_dir: bool  # `down` removes the directory only if `up` created it
    subnet: str
    bridge: str
    bridge_address: str
    nodes: list[Member] = field(default_factory=list)
    outsider: Member | None = None
    outsider_subnet: str | None = None
    shared: list[str] = field(default_factory=list)  # folders every node sees read-only
    version: int = FORMAT_VERSION

    @property
    def members(self) -> list[Member]:
        """The nodes, then the outsider if there is one."""
        return self.nodes + ([self.outsider] if self.outsider else [])

    def member(self, name: str) -> Member:
        for member in self.members:
            if member.name == name:
                return member
        known = ", ".join(member.name for member in self.members)
        raise InputError(f"no node {name!r} in the testbed at {self.dir}; it has: {known}")

    def save(self, path: Path) -> None:
        """Write atomically: a crash mid-write must not lose what `down` needs to know."""
        temporary = path.with_name(f".{path.name}.tmp")
        temporary.write_text(json.dumps(asdict(self), indent=2) + "\n")
        os.replace(temporary, path)

    @classmethod
    def load(cls, path: Path) -> State:
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise InputError(f"no testbed at {path.parent} (no {path.name}); create one with "
                             f"`nodeprov testbed up --dir {path.parent}`") from None
        except ValueError as error:
            raise InputError(f"{path}: not a testbed state file: {error}") from None
        if data.get("version") != FORMAT_VERSION:
            raise InputError(f"{path}: state format {data.get('version')!r}, this nodeprov "
                             f"reads {FORMAT_VERSION}")
        outsider = data.pop("outsider")
        nodes = data.pop("nodes")
        return cls(**data, nodes=[Member.from_json(node) for node in nodes],
                   outsider=Member.from_json(outsider) if outsider else None)

