"""An admin machine without internet, for the tests: a network namespace whose only link is a
veth on a testbed's bridge, with an address in the node subnet and no default route.

    with admin_without_internet(testbed) as run:
        done = run(["nodeprov", "apply", str(testbed.inventory_path)], env={...})

What runs there reaches the nodes and nothing else (a connection anywhere else fails at once:
"Network is unreachable"); it sees this machine's files, so a folder mirror (a file:// index)
is there as it is here.
"""

from __future__ import annotations

import hashlib
import ipaddress
import subprocess
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager

from nodeprov.testbed.cluster import Testbed

Run = Callable[..., subprocess.CompletedProcess[str]]
# a connection to the internet, tried from inside: must fail with ENETUNREACH at once
_NO_ROUTE = ("import errno, socket\ntry:\n    socket.create_connection(('192.0.2.1', 443), 2)\n"
             "except OSError as error:\n    raise SystemExit(0 if error.errno == "
             "errno.ENETUNREACH else 1)\nraise SystemExit(1)\n")


@contextmanager
def admin_without_internet(testbed: Testbed) -> Iterator[Run]:
    """The namespace, up for the block and deleted after it: a function running argv there
    (``subprocess.run``'s keywords; text, output captured)."""
    tag = hashlib.sha256(testbed.state.bridge.encode()).hexdigest()[:8]
    netns, veth = f"nodeprov-admin-{tag}", f"npadm{tag}"
    subnet = ipaddress.ip_network(testbed.subnet)
    address = f"{subnet.broadcast_address - 1}/{subnet.prefixlen}"  # nodes take the first ones
    steps = [["ip", "netns", "add", netns],
             ["ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", netns],
             ["ip", "link", "set", veth, "master", testbed.state.bridge, "up"],
             ["ip", "-n", netns, "link", "set", "lo", "up"],
             ["ip", "-n", netns, "addr", "add", address, "dev", "eth0"],
             ["ip", "-n", netns, "link", "set", "eth0", "up"]]
    try:
        for step in steps:
            subprocess.run(step, check=True, capture_output=True, text=True)

        def run(argv: Sequence[str], env: Mapping[str, str] | None = None,
                timeout: float = 900) -> subprocess.CompletedProcess[str]:
            return subprocess.run(["ip", "netns", "exec", netns, *argv], env=env,
                                  capture_output=True, text=True, timeout=timeout, check=False)

        routes = subprocess.run(["ip", "-n", netns, "route"], check=True, capture_output=True,
                                text=True).stdout
        assert "default" not in routes, routes
        assert run(["python3", "-c", _NO_ROUTE]).returncode == 0, "a route out is left"
        yield run
    finally:
        subprocess.run(["ip", "netns", "del", netns], capture_output=True, check=False)
