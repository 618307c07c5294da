"""Names of the namespaces and links a testbed makes, derived from its directory.

A short hash of the directory prefixes every name, so testbeds in different directories never
collide, and every interface name fits Linux's 15-character limit::

    >>> names = Names.for_dir(Path("/srv/nodeprov-testbed"))
    >>> names.bridge, names.netns("node3"), names.veth("node3"), names.veth("outsider")
    ('nte712e1br', 'nte712e1-node3', 'nte712e1n3', 'nte712e1o')
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

OUTSIDER = "outsider"
MARKER = "NODEPROV_TESTBED"  # in the environment of a node's processes: NODEPROV_TESTBED=<prefix>
NODE_PREFIX = "node"
MAX_NODES = 250  # a /24 holds the bridge and 253 hosts; 250 keeps veth names at 12 characters
IFNAMSIZ = 15  # Linux's limit on interface names, without the trailing NUL


def node_names(count: int) -> list[str]:
    """``node1`` .. ``nodeN``."""
    return [f"{NODE_PREFIX}{index}" for index in range(1, count + 1)]


@dataclass(frozen=True)
class Names:
    """Every name a testbed gives the kernel; ``prefix`` is ``nt`` plus 6 hex digits."""

    prefix: str

    @classmethod
    def for_dir(cls, directory: Path) -> Names:
        digest = hashlib.sha256(str(directory).encode()).hexdigest()
        return cls(f"nt{digest[:6]}")

    @property
    def bridge(self) -> str:
        return f"{self.prefix}br"

    @property
    def marker(self) -> str:
        """The variable every node process of this testbed carries: `down` and `exec` act on a
        process only with it (a PID from a state file could name any process)."""
        return f"{MARKER}={self.prefix}"

    def netns(self, member: str) -> str:
        """The network namespace of a node or of the outsider (``ip netns`` lists it)."""
        return f"{self.prefix}-{member}"

    def veth(self, member: str) -> str:
        """The root-namespace end of a member's veth pair; its other end is ``eth0`` inside."""
        if member == OUTSIDER:
            name = f"{self.prefix}o"
        else:
            name = f"{self.prefix}n{member.removeprefix(NODE_PREFIX)}"
        if len(name) > IFNAMSIZ:
            raise ValueError(f"interface name {name!r} is longer than {IFNAMSIZ} characters")
        return name
