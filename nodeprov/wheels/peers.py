"""Wheels leave this machine once: the first node to need a wheel set seeds the others.

    distribution = Distribution()                 # one per run (the runner makes it)
    upload = PeerUpload(local, remote, key, address, fill=torch_set, optional="...")
    download = PeerDownload(pip_download_argv, key=key, remote_path=remote, address=address,
                            wanted=torch_set)     # the torch task plans either
    ...                                           # peer_exec.execute runs them
    distribution.close()                          # stops every seed's server

The first host whose plan asks for a wheel set (``key``) becomes its seed: it gets the upload
from this machine (``PeerUpload``, filled here first: ``thismachine``), or downloads the set
itself (``PeerDownload``, where no wheelhouse is used: exactly the files this machine resolved,
each with the sha256 the index gave), then serves its copy over HTTP on its node-subnet address
under a per-run token (``peer_scripts.SERVE``). Every other host waits for the seed, fetches
from it and checks each file's sha256 and size against what this machine knows (its own copy,
or the index's hashes), never against anything a node says; then it serves its copy too. If
no node could give a good copy (the seed failed or took too long, a file was wrong), that host
gets the upload or makes the download itself: a failed seed never fails another host. A host
without a node-subnet address (``address`` empty) takes the upload or its own download.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from nodeprov.remote.actions import Run, Upload
from nodeprov.wheels.thismachine import ThisMachine, WheelSet

if TYPE_CHECKING:
    from nodeprov.remote.facts import Facts

WAIT_SECONDS = 3600.0  # for the seed's upload: one copy of ~3 GB over a slow uplink
SERVE_LIFETIME = 3600.0
SERVE_IDLE = 300.0
PER_SOURCE = 4  # fetches a node serves at once: more wait for the nodes that finished
MAX_WHEEL = 4 << 30  # bytes of one fetched file whose size this machine cannot know
UPLOADED = "uploaded from this machine"
DOWNLOADED = "downloaded by the node itself"


@dataclass(frozen=True)
class PeerUpload(Upload):
    """``local_path``'s files into ``remote_path`` (made first, emptied): from a node that has
    them, else uploaded. ``fill``: what this machine downloads into ``local_path`` first;
    ``address``: this host's node-subnet address, where it serves if it is the seed (empty:
    no peers); ``optional``: when the copy fails, the task goes on and warns with these words
    (what the node does instead); ``staged``: root's folder the files are copied into, each
    checked, before ``then`` runs and for the install (``staged``; empty: none);
    ``then``: run on the node once the files are there."""

    key: str = ""
    address: str = ""
    python: str = "python3"
    fill: WheelSet | None = None
    optional: str = ""
    staged: str = ""
    then: tuple[str, ...] = ()

    def __str__(self) -> str:
        return f"wheels {self.local_path} -> {self.remote_path} (from a peer, else uploaded)"


@dataclass(frozen=True)
class PeerDownload(Run):
    """The node's own download of a wheel set into ``remote_path`` (``argv``: pip download,
    ending ``-- SPECS``), which only the set's seed runs, of the files this machine resolved
    from ``wanted``: the others fetch the seed's copy and check it against those
    (``address``: this host's node-subnet address, where it serves if it is the seed)."""

    key: str = ""
    remote_path: str = ""
    address: str = ""
    python: str = "python3"
    wanted: WheelSet | None = None

    def __str__(self) -> str:
        return "download the wheels on one node (the others fetch its copy)"


PeerCopy = PeerUpload | PeerDownload


def alone(action: PeerCopy) -> Upload | Run:
    """What the action is without peers: the upload, or this node's own download."""
    if isinstance(action, PeerUpload):
        return Upload(action.local_path, action.remote_path)
    return Run(action.argv, hint=action.hint)


@dataclass(frozen=True)
class WheelFile:
    """One file of a wheel set, as a fetch checks it (``size``: at most this many bytes)."""

    name: str
    sha256: str
    size: int


@dataclass
class _WheelSet:
    seed: str
    settled: bool = False  # the seed serves, or never will
    fetching: dict[str, int] = field(default_factory=dict)  # source URL -> fetches under way
    stops: list[Callable[[], None]] = field(default_factory=list)


class Distribution:
    """Who seeds which wheel set in this run, and the nodes serving it (thread-safe).

    A node that fetched a good copy serves it too (``serving``), and a source serves at most
    ``per_source`` fetches at once, so the copies spread as a tree: each fetch waits for the
    least busy source with room.
    """

    def __init__(self, wait_seconds: float = WAIT_SECONDS, per_source: int = PER_SOURCE,
                 here: ThisMachine | None = None) -> None:
        self.wait_seconds, self.per_source = wait_seconds, per_source
        self.here = here or ThisMachine()
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._sets: dict[str, _WheelSet] = {}
        self._warnings: dict[str, list[str]] = {}

    def seed_for(self, key: str, host: str) -> str:
        """The seed of ``key``: ``host`` itself when it asks first (asking again: the same)."""
        with self._lock:
            return self._sets.setdefault(key, _WheelSet(host)).seed

    def expected(self, action: PeerUpload) -> tuple[WheelFile, ...]:
        """The files a fetch of the action's wheel set must yield: this machine's copy."""
        return tuple(WheelFile(name, digest, (Path(action.local_path) / name).stat().st_size)
                     for name, digest in self.here.digests(action.local_path))

    def serving(self, key: str, url: str, stop: Callable[[], None]) -> None:
        """A node serves ``key`` at ``url``; ``stop`` ends that (at ``close``)."""
        with self._changed:
            wheel_set = self._sets[key]
            wheel_set.fetching[url] = 0
            wheel_set.stops.append(stop)
            wheel_set.settled = True
            self._changed.notify_all()

    def failed(self, key: str) -> None:
        """The seed will not serve ``key``: its waiters take the upload instead."""
        with self._changed:
            self._sets[key].settled = True
            self._changed.notify_all()

    def acquire(self, key: str) -> str | None:
        """The least busy source of ``key`` with room, counted until ``release``; None when
        none is left, or after ``wait_seconds``."""
        deadline = time.monotonic() + self.wait_seconds
        with self._changed:
            wheel_set = self._sets[key]
            while not (wheel_set.settled and not wheel_set.fetching):
                room = [url for url, count in wheel_set.fetching.items()
                        if count < self.per_source]
                if room:
                    url = min(room, key=wheel_set.fetching.__getitem__)
                    wheel_set.fetching[url] += 1
                    return url
                if not self._changed.wait(max(0.0, deadline - time.monotonic())):
                    return None
            return None

    def release(self, key: str, url: str, good: bool) -> None:
        """A fetch from ``url`` ended; a source that gave a bad copy is not used again."""
        with self._changed:
            fetching = self._sets[key].fetching
            if url in fetching:
                fetching[url] -= 1
                if not good:
                    del fetching[url]
            self._changed.notify_all()

    def warn(self, host: str, text: str) -> None:
        """A warning for ``host``'s task result (``warnings_for``)."""
        with self._lock:
            self._warnings.setdefault(host, []).append(text)

    def warnings_for(self, host: str) -> list[str]:
        """``host``'s warnings since the last call."""
        with self._lock:
            return self._warnings.pop(host, [])

    def close(self) -> None:
        """Stop every server (each also stops by itself: ``peer_scripts.SERVE``)."""
        with self._lock:
            stops = [stop for wheel_set in self._sets.values() for stop in wheel_set.stops]
            for wheel_set in self._sets.values():
                wheel_set.stops.clear()
        for stop in stops:
            stop()



def plan_copy(distribution: Distribution | None, host: str, facts: Facts, subnet: str | None,
              copy: PeerUpload) -> tuple[PeerUpload, str]:
    """``copy`` as ``host`` takes it, and the plan's words on where it comes from: from the
    seed when the run distributes and the host has an address in ``subnet``, else uploaded."""
    address = subnet_address(facts, subnet)
    if distribution is None or address is None or not facts.python_path:
        return dataclasses.replace(copy, address=""), UPLOADED
    seed = distribution.seed_for(copy.key, host)
    return (dataclasses.replace(copy, address=address, python=facts.python_path),
            UPLOADED if seed == host else f"from {seed} over the node subnet")


def plan_download(distribution: Distribution | None, host: str, facts: Facts,
                  subnet: str | None, download: PeerDownload) -> tuple[Run, str]:
    """``download`` as one node's for every host whose download is the same, and the plan's
    words on where the wheels come from; the plain download without peers."""
    address = subnet_address(facts, subnet)
    if distribution is None or address is None or not facts.python_path:
        return Run(download.argv, hint=download.hint), DOWNLOADED
    seed = distribution.seed_for(download.key, host)
    words = (f"{DOWNLOADED}, for the other nodes too" if seed == host
             else f"downloaded once by {seed}, fetched over the node subnet")
    return dataclasses.replace(download, address=address, python=facts.python_path), words


def subnet_address(facts: Facts, subnet: str | None) -> str | None:
    """The host's address in ``subnet``, where it serves wheels."""
    addresses = facts.interfaces_in(subnet) if subnet else []
    if not addresses:
        return None
    return str(ipaddress.ip_interface(addresses[0].addresses_in(str(subnet))[0]).ip)
