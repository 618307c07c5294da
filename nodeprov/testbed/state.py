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
import re
import stat
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from nodeprov.errors import InputError
from nodeprov.testbed.naming import Names
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
        """The state of the testbed in ``path``'s folder, trusted only as root's own file in
        root's own folder (neither writable by others), and naming only the links, namespaces
        and marker of that folder (``Names.for_dir``): what it says, `down` deletes and kills."""
        try:
            trusted(path.parent, directory=True)
            trusted(path, directory=False)
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
        state = cls(**data, nodes=[Member.from_json(node) for node in nodes],
                    outsider=Member.from_json(outsider) if outsider else None)
        _check_names(state, path)
        return state


def trusted(path: Path, *, directory: bool) -> None:
    """``path`` is root's own, writable by root alone, and no symlink."""
    found = os.lstat(path)
    kind = "folder" if directory else "file"
    if stat.S_ISLNK(found.st_mode) or stat.S_ISDIR(found.st_mode) != directory:
        raise InputError(f"{path} is not a {kind} (a symlink?): a testbed's state is trusted "
                         "only in root's own files")
    if found.st_uid != 0 or found.st_mode & 0o022:
        raise InputError(f"{path} is owned by uid {found.st_uid} with mode "
                         f"{found.st_mode & 0o7777:o}: a testbed's state is trusted only when "
                         f"root owns its {kind} and no one else may write it")


def _check_names(state: State, path: Path) -> None:
    """Every link and namespace the state names is this folder's (its prefix): a state file
    copied from elsewhere or edited never sends `down` after anything else."""
    names = Names.for_dir(path.parent)
    if state.dir != str(path.parent):
        raise InputError(f"{path}: made for {state.dir!r}, not this folder")
    wanted = [(state.bridge, names.bridge)]
    for member in state.members:
        if not re.fullmatch(r"node[1-9][0-9]{0,2}|outsider", member.name):
            raise InputError(f"{path}: {member.name!r} is no testbed node's name")
        wanted += [(member.netns, names.netns(member.name)),
                   (member.veth, names.veth(member.name))]
    for found, expected in wanted:
        if found != expected:
            raise InputError(f"{path}: {found!r} is none of this testbed's (expected "
                             f"{expected!r}); remove the testbed by hand")

