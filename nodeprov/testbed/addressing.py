"""Subnets and addresses: a /24 in 10.0.0.0/8 that clashes with nothing the machine routes.

    >>> taken = parse_routes('[{"dst": "default"}, {"dst": "10.1.2.0/24"}]')
    >>> taken
    [IPv4Network('10.1.2.0/24')]
    >>> free_subnet("seed", taken) in taken
    False
    >>> bridge, nodes = plan_addresses(IPv4Network("10.77.3.0/24"), ["node1", "node2"])
    >>> str(bridge), str(nodes["node2"])
    ('10.77.3.1/24', '10.77.3.3/24')
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Sequence
from ipaddress import IPv4Interface, IPv4Network, ip_network

from nodeprov.errors import EnvironmentProblem, InputError

POOL = IPv4Network("10.0.0.0/8")
SUBNET_PREFIX = 24


def parse_routes(ip_json: str) -> list[IPv4Network]:
    """The destinations in ``ip -j -4 route show table all`` output, except the default route."""
    return [IPv4Network(route["dst"], strict=False) for route in json.loads(ip_json)
            if route.get("dst", "default") != "default"]


def routed_subnets() -> list[IPv4Network]:
    """Every IPv4 destination the machine routes now, in any table (other testbeds' too)."""
    output = subprocess.run(["ip", "-j", "-4", "route", "show", "table", "all"],
                            capture_output=True, text=True, check=True).stdout
    return parse_routes(output)


def free_subnet(seed: str, taken: Sequence[IPv4Network]) -> IPv4Network:
    """The first /24 of 10.0.0.0/8, starting from one picked by ``seed``, overlapping no ``taken``.

    The same seed (a testbed's directory) gives the same subnet while it stays free.
    """
    count = 2 ** (SUBNET_PREFIX - POOL.prefixlen)
    start = int(hashlib.sha256(seed.encode()).hexdigest(), 16) % count
    size = 2 ** (32 - SUBNET_PREFIX)
    for step in range(count):
        index = (start + step) % count
        candidate = IPv4Network((int(POOL.network_address) + index * size, SUBNET_PREFIX))
        if not any(candidate.overlaps(other) for other in taken):
            return candidate
    raise EnvironmentProblem(f"no free /{SUBNET_PREFIX} left in {POOL}; pass --subnet")


def chosen_subnet(text: str, taken: Sequence[IPv4Network]) -> IPv4Network:
    """Validate a ``--subnet``: IPv4, at most /29, and clashing with no route of the machine."""
    try:
        subnet = ip_network(text)
    except ValueError as error:
        raise InputError(f"{error}; give a network such as 10.77.3.0/24",
                         field="--subnet") from None
    if not isinstance(subnet, IPv4Network) or subnet.prefixlen > 29:
        raise InputError(f"{text} must be an IPv4 network of at most /29",
                         field="--subnet")
    for other in taken:
        if subnet.overlaps(other):
            raise InputError(f"{subnet} overlaps {other}, which this machine already routes; "
                             "choose another", field="--subnet")
    return subnet


def plan_addresses(subnet: IPv4Network, members: Sequence[str],
                   ) -> tuple[IPv4Interface, dict[str, IPv4Interface]]:
    """The subnet's first address for the bridge, then one each for ``members`` in order."""
    hosts = subnet.hosts()
    available = subnet.num_addresses - 2
    if len(members) + 1 > available:
        raise InputError(f"{subnet} has room for {available - 1} nodes, not {len(members)}",
                         field="--subnet")
    bridge = IPv4Interface((next(hosts), subnet.prefixlen))
    return bridge, {name: IPv4Interface((next(hosts), subnet.prefixlen)) for name in members}
