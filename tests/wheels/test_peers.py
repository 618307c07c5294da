"""The per-run coordinator: one seed per wheel set, waiters get its URL, and the plan's words."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import pytest

from nodeprov.remote.actions import Run
from nodeprov.remote.facts import Facts
from nodeprov.wheels.peers import (
    DOWNLOADED,
    UPLOADED,
    Distribution,
    PeerDownload,
    PeerUpload,
    WheelFile,
    plan_copy,
    plan_download,
)
from tests.tasks.kit import RECORDED, make_facts

SUBNET = "192.0.2.0/24"  # the recorded VM's eth0 holds 192.0.2.2/24


def test_the_first_host_to_ask_is_the_seed_once_whatever_the_threads() -> None:
    distribution = Distribution()
    seeds: list[str] = []
    threads = [threading.Thread(target=lambda n=n: seeds.append(
        distribution.seed_for("set", f"node{n}"))) for n in range(32)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(seeds)) == 1 and len(seeds) == 32
    (seed,) = set(seeds)
    assert distribution.seed_for("set", seed) == seed  # asking again: the same answer
    assert distribution.seed_for("another set", "node31") == "node31"


def test_waiters_get_the_seeds_url_and_close_stops_it_once() -> None:
    distribution = Distribution()
    distribution.seed_for("set", "node1")
    got: list[str | None] = []
    waiter = threading.Thread(target=lambda: got.append(distribution.acquire("set")))
    waiter.start()
    stopped: list[str] = []
    distribution.serving("set", "http://192.0.2.2:40000/", lambda: stopped.append("node1"))
    waiter.join(5)
    assert got == ["http://192.0.2.2:40000/"]
    distribution.close()
    distribution.close()
    assert stopped == ["node1"]


def test_each_fetch_goes_to_the_least_busy_source_and_a_bad_one_is_dropped() -> None:
    distribution = Distribution()
    distribution.seed_for("set", "node1")
    distribution.serving("set", "http://seed/", lambda: None)
    assert distribution.acquire("set") == "http://seed/"  # node2 fetches from the seed
    distribution.serving("set", "http://node3/", lambda: None)  # node3 had fetched before
    assert distribution.acquire("set") == "http://node3/"  # the seed is busy: node3
    distribution.release("set", "http://node3/", good=False)  # node3 sent a wrong file
    distribution.release("set", "http://seed/", good=True)
    assert [distribution.acquire("set") for _ in range(2)] == ["http://seed/"] * 2
    distribution.release("set", "http://seed/", good=False)
    assert distribution.acquire("set") is None  # none left: the upload


def test_a_failed_or_slow_seed_releases_its_waiters_with_no_url() -> None:
    distribution = Distribution()
    distribution.seed_for("set", "node1")
    distribution.failed("set")
    assert distribution.acquire("set") is None
    slow = Distribution(wait_seconds=0.05)
    slow.seed_for("set", "node1")
    assert slow.acquire("set") is None


def test_digests_are_this_machines_files_as_an_upload_sends_them(tmp_path: Path) -> None:
    (tmp_path / "a.whl").write_bytes(b"wheel")
    (tmp_path / ".lock").write_bytes(b"")
    (tmp_path / "sub").mkdir()
    distribution = Distribution()
    assert distribution.expected(PeerUpload(str(tmp_path), "/r", "set")) == (
        WheelFile("a.whl", hashlib.sha256(b"wheel").hexdigest(), 5),)
    (tmp_path / "a.whl").write_bytes(b"changed")  # read once per run
    assert distribution.here.digests(str(tmp_path)) == (
        ("a.whl", hashlib.sha256(b"wheel").hexdigest()),)


def test_the_plan_says_where_the_wheels_come_from() -> None:
    distribution = Distribution()
    copy = PeerUpload("/l", "/r", "set")
    seed, words = plan_copy(distribution, "node1", RECORDED, SUBNET, copy)
    assert words == UPLOADED == "uploaded from this machine"
    assert seed == PeerUpload("/l", "/r", "set", "192.0.2.2", str(RECORDED.python_path))
    peer, words = plan_copy(distribution, "node2", RECORDED, SUBNET, copy)
    assert words == "from node1 over the node subnet" and peer.address == "192.0.2.2"
    download = PeerDownload(("pip", "download"), key="set2", remote_path="/r")
    seed_download, words = plan_download(distribution, "node1", RECORDED, SUBNET, download)
    assert words == f"{DOWNLOADED}, for the other nodes too"
    assert isinstance(seed_download, PeerDownload) and seed_download.address == "192.0.2.2"
    assert plan_download(distribution, "node2", RECORDED, SUBNET, download)[1] == (
        "downloaded once by node1, fetched over the node subnet")


@pytest.mark.parametrize(("distribution", "subnet", "facts"), [
    (None, SUBNET, RECORDED),                   # verify's plans: no run to share
    (Distribution(), None, RECORDED),           # no node_subnet
    (Distribution(), "10.9.0.0/16", RECORDED),  # no address in it
    (Distribution(), SUBNET, make_facts(python_path=None)),
])
def test_otherwise_uploaded_or_downloaded_alone(distribution: Distribution | None,
                                                subnet: str | None, facts: Facts) -> None:
    action, words = plan_copy(distribution, "node1", facts, subnet, PeerUpload("/l", "/r", "k"))
    assert action == PeerUpload("/l", "/r", "k") and not action.address and words == UPLOADED
    download = PeerDownload(("pip", "download"), key="k", remote_path="/r")
    alone, words = plan_download(distribution, "node1", facts, subnet, download)
    assert alone == Run(("pip", "download")) and type(alone) is Run and words == DOWNLOADED


def test_a_full_source_makes_the_next_fetch_wait_for_room_or_a_new_source() -> None:
    distribution = Distribution(per_source=1)
    distribution.seed_for("set", "node1")
    distribution.serving("set", "http://seed/", lambda: None)
    assert distribution.acquire("set") == "http://seed/"  # node2 fetches
    got: list[str | None] = []
    waiter = threading.Thread(target=lambda: got.append(distribution.acquire("set")))
    waiter.start()
    waiter.join(0.2)
    assert got == []  # node3 waits: the seed is full
    distribution.serving("set", "http://node2/", lambda: None)  # node2 done, serves
    waiter.join(5)
    assert got == ["http://node2/"]
    full = Distribution(wait_seconds=0.05, per_source=1)
    full.seed_for("set", "node1")
    full.serving("set", "http://seed/", lambda: None)
    assert full.acquire("set") == "http://seed/"
    assert full.acquire("set") is None  # no room in time: the upload
