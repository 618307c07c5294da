"""Wheels leave this machine once: the first node to need a wheel set seeds the others.

    distribution = Distribution()                 # one per run (the runner makes it)
    upload = PeerUpload(local, remote, key, address)   # the torch task plans either
    download = PeerDownload(pip_download_argv, key=key, remote_path=remote, address=address)
    ...                                           # peer_exec.execute runs them
    distribution.close()                          # stops every seed's server

The first host whose plan asks for a wheel set (``key``) becomes its seed: it gets the upload
from this machine (``PeerUpload``), or downloads the set itself (``PeerDownload``, where no
wheelhouse is used), then serves its copy over HTTP on its node-subnet address
(``peer_scripts.SERVE``). Every other host waits for the seed, fetches from it and checks each
file's sha256 (against this machine's copy, or the list the seed read of its download), then
serves its copy too; if no node could give a good copy (the seed failed or took too long, a
file was wrong), that host gets the upload or makes the download itself: a failed seed never
fails another host. Run by anything else, either is the plain action (``alone``).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from nodeprov.remote.actions import Run, Upload

WAIT_SECONDS = 3600.0  # for the seed's upload: one copy of ~3 GB over a slow uplink
SERVE_LIFETIME = 3600.0
SERVE_IDLE = 300.0
PER_SOURCE = 4  # fetches a node serves at once: more wait for the nodes that finished
UPLOADED = "uploaded from this machine"
DOWNLOADED = "downloaded by the node itself"


@dataclass(frozen=True)
class PeerUpload(Upload):
    """An Upload this host may take from the wheel set's seed instead (``address``: this
    host's node-subnet address, where it serves if it is the seed)."""

    key: str = ""
    address: str = ""
    python: str = "python3"

    def __str__(self) -> str:
        return f"wheels {self.local_path} -> {self.remote_path} (from a peer, else uploaded)"


@dataclass(frozen=True)
class PeerDownload(Run):
    """The node's own download of a wheel set into ``remote_path`` (``argv``: pip download),
    which only the set's seed runs: the others fetch the seed's copy (``address``: this host's
    node-subnet address, where it serves if it is the seed)."""

    key: str = ""
    remote_path: str = ""
    address: str = ""
    python: str = "python3"

    def __str__(self) -> str:
        return f"{super().__str__()} (on one node; the others fetch its copy)"


PeerCopy = PeerUpload | PeerDownload


def alone(action: PeerCopy) -> Upload | Run:
    """What the action is without peers: the upload, or this node's own download."""
    if isinstance(action, PeerUpload):
        return Upload(action.local_path, action.remote_path)
    return Run(action.argv, hint=action.hint)


@dataclass(frozen=True)
class WheelFile:
    """One file of a wheel set, as a fetch checks it."""

    name: str
    sha256: str
    size: int


@dataclass
class _WheelSet:
    seed: str
    settled: bool = False  # the seed serves, or never will
    fetching: dict[str, int] = field(default_factory=dict)  # source URL -> fetches under way
    files: tuple[WheelFile, ...] = ()  # a download's files, as its seed listed them
    stops: list[Callable[[], None]] = field(default_factory=list)


class Distribution:
    """Who seeds which wheel set in this run, and the nodes serving it (thread-safe).

    A node that fetched a good copy serves it too (``serving``), and a source serves at most
    ``per_source`` fetches at once, so the copies spread as a tree: each fetch waits for the
    least busy source with room.
    """

    def __init__(self, wait_seconds: float = WAIT_SECONDS, per_source: int = PER_SOURCE) -> None:
        self.wait_seconds, self.per_source = wait_seconds, per_source
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._sets: dict[str, _WheelSet] = {}
        self._digests: dict[str, tuple[tuple[str, str], ...]] = {}
        self._digest_locks: dict[str, threading.Lock] = {}
        self._warnings: dict[str, list[str]] = {}

    def seed_for(self, key: str, host: str) -> str:
        """The seed of ``key``: ``host`` itself when it asks first (asking again: the same)."""
        with self._lock:
            return self._sets.setdefault(key, _WheelSet(host)).seed

    def downloaded(self, key: str, files: tuple[WheelFile, ...]) -> None:
        """The seed's download of ``key`` holds ``files`` (before it serves them)."""
        with self._lock:
            self._sets[key].files = files

    def expected(self, action: PeerCopy) -> tuple[WheelFile, ...]:
        """The files a fetch of the action's wheel set must yield: this machine's copy, or
        what the seed listed of its download."""
        if isinstance(action, PeerDownload):
            with self._lock:
                return self._sets[action.key].files
        return tuple(WheelFile(name, digest, (Path(action.local_path) / name).stat().st_size)
                     for name, digest in self.digests(action.local_path))

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

    def digests(self, local_dir: str) -> tuple[tuple[str, str], ...]:
        """(name, sha256) of each file an Upload of ``local_dir`` sends, read once per run
        (under the folder's own lock: hashing gigabytes holds up no other wheel set)."""
        with self._lock:
            folder_lock = self._digest_locks.setdefault(local_dir, threading.Lock())
        with folder_lock:
            if local_dir not in self._digests:
                self._digests[local_dir] = tuple(
                    (path.name, _sha256(path)) for path in sorted(Path(local_dir).iterdir())
                    if path.is_file() and not path.name.startswith("."))
            return self._digests[local_dir]

    def close(self) -> None:
        """Stop every server (each also stops by itself: ``peer_scripts.SERVE``)."""
        with self._lock:
            stops = [stop for wheel_set in self._sets.values() for stop in wheel_set.stops]
            for wheel_set in self._sets.values():
                wheel_set.stops.clear()
        for stop in stops:
            stop()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
