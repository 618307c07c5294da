"""verify's reads keep to --forks: the fresh-session read (one command per node on its open
session) and the checks' own."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any, cast

from nodeprov.checks.cluster import Cluster, Opened
from nodeprov.checks.fresh import Fresh, read_all_fresh
from nodeprov.remote.session import Session
from tests.tasks.kit import make_facts


class FakeSession:
    """Answers the fresh read as a node would, and counts how many run at the same time."""

    running = 0
    most = 0
    lock = threading.Lock()
    names: tuple[str, ...] = ()

    def __init__(self) -> None:
        self.host = SimpleNamespace(vars={"node_subnet": "10.0.0.0/24"})

    def run(self, argv: tuple[str, ...], **_: Any) -> SimpleNamespace:
        with self.lock:
            FakeSession.running += 1
            FakeSession.most = max(FakeSession.most, FakeSession.running)
        time.sleep(0.02)
        with self.lock:
            FakeSession.running -= 1
        token = argv[4]
        FakeSession.names = argv[6:]
        return SimpleNamespace(stdout=f"NCCL_SOCKET_IFNAME=eth1\n@@{token} name node1\n"
                                      "10.0.0.2 STREAM node1\n")


def test_the_fresh_read_keeps_to_forks_and_keeps_each_nodes_failure() -> None:
    names = [f"node{i}" for i in range(8)]
    sessions = {name: cast(Session, FakeSession()) for name in names}
    gathered: dict[str, Any] = {name: make_facts(hostname=f"gpu{name[-1]}", fqdn=f"gpu{name[-1]}")
                                for name in names}
    gathered["node7"] = "node7: facts could not be read"
    seen = read_all_fresh(names, sessions, gathered, forks=2)
    assert FakeSession.most == 2
    assert seen["node7"] == "node7: facts could not be read"
    assert seen["node0"] == Fresh({"NCCL_SOCKET_IFNAME": "eth1"},
                                  resolved={"node1": ["10.0.0.2"]})
    # every inventory name, and each node's hostname (what torch advertises), to resolve
    assert FakeSession.names == (*names, *(f"gpu{i}" for i in range(7)))


def test_the_checks_keep_to_verifys_forks_too() -> None:
    # Cluster.each runs the checks' own reads (torch imports take seconds) at --forks at once
    cluster = Cluster(cast(Any, None), cast(Any, None), None, [], cast(Any, None),
                      cast(Any, None))
    cluster.adopt(Opened({}, {}, {}, {}, forks=3))
    running = most = 0
    lock = threading.Lock()

    def work(_: object) -> None:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.02)
        with lock:
            running -= 1

    cluster.each(work, cast(Any, list(range(9))))
    assert most == 3
