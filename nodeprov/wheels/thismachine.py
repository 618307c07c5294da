"""What this machine does for the nodes, once per run whoever asks: download a wheel set (the
wheelhouse, uv), resolve one (download_once's hashes), hash a folder.

    here = ThisMachine()                  # one per run (Distribution.here)
    here.fill("/root/.cache/nodeprov/uv/uv-0.13.9-x86_64-glibc2.36", UV_SET)
    pins = here.pins(TORCH_SET)           # name, version, file and sha256 from the index
    here.digests(folder)                  # (name, sha256) of the files an upload sends

A WheelSet comes from the inventory's sources, else this machine's pip configuration, else
its default (``pipconfig.for_this_machine``): never from an index the inventory did not name.
Each result, a failure included, is kept for the run (``Once``): a thousand hosts asking for a
download that cannot succeed cause one attempt.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

from nodeprov.wheels import pipconfig, wheelhouse
from nodeprov.wheels.resolve import Pinned, resolve
from nodeprov.wheels.sources import Sources

T = TypeVar("T")


@dataclass(frozen=True)
class WheelSet:
    """A wheel set as this machine asks pip for it: the options picking the nodes' wheels
    (``--python-version``, ``--platform``, ...), the specs, and where from."""

    platform: tuple[str, ...]
    specs: tuple[str, ...]
    sources: Sources = Sources()  # the inventory's (empty: this machine's pip config, else default)
    default: tuple[str, ...] = ()
    variant: str = ""

    def options(self, here: pipconfig.NodePip) -> tuple[tuple[str, ...], str]:
        """The source options for this machine's pip, and the words naming them."""
        return pipconfig.for_this_machine(self.sources, self.default, here, self.variant)

    @property
    def what(self) -> str:
        """The specs, for a message: ``torch==2.13.0+cpu and 2 more``."""
        more = f" and {len(self.specs) - 1} more" if len(self.specs) > 1 else ""
        return f"{self.specs[0]}{more}" if self.specs else "nothing"


@dataclass
class _Entry(Generic[T]):
    done: threading.Event = field(default_factory=threading.Event)
    value: list[T] = field(default_factory=list)
    error: Exception | None = None


class Once(Generic[T]):
    """Each key's function runs once, whoever asks first; the others wait for it and get its
    result, or its exception again (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry[T]] = {}

    def get(self, key: str, make: Callable[[], T]) -> T:
        with self._lock:
            first = key not in self._entries
            entry = self._entries.setdefault(key, _Entry())
        if first:
            try:
                entry.value.append(make())
            except Exception as error:  # kept, and raised to every caller
                entry.error = error
            finally:
                entry.done.set()
        entry.done.wait()
        if entry.error is not None:
            raise entry.error
        return entry.value[0]


class ThisMachine:
    """This machine's share of one run (thread-safe)."""

    def __init__(self, pip: Callable[[], pipconfig.NodePip] = pipconfig.this_machine) -> None:
        self._pip = pip
        self._config: Once[pipconfig.NodePip] = Once()
        self._fills: Once[str] = Once()
        self._pins: Once[tuple[Pinned, ...]] = Once()
        self._digests: Once[tuple[tuple[str, str], ...]] = Once()
        self._failed: dict[str, str] = {}  # folder -> why its fill failed in this run

    def failure(self, folder: str) -> str | None:
        """Why filling ``folder`` failed earlier in this run (None: it did not, or not yet):
        the plans of later hosts and tasks say so instead of trying again."""
        return self._failed.get(folder)

    def sources(self, wanted: WheelSet) -> tuple[tuple[str, ...], str]:
        """Where this machine's pip takes ``wanted`` from: options and words."""
        return wanted.options(self._config.get("", self._pip))

    def fill(self, folder: str, wanted: WheelSet) -> str:
        """Download ``wanted`` into ``folder`` (once); the words naming the sources used.
        Raises DownloadFailed with pip's reason, in those words."""
        options, words = self.sources(wanted)
        args = ("download", "--only-binary=:all:", *wanted.platform, "--no-input",
                "--progress-bar", "off", *options, "--", *wanted.specs)

        def download() -> str:
            try:
                wheelhouse.fetch(Path(folder), args)
            except wheelhouse.DownloadFailed as error:
                self._failed[folder] = f"from {words}: {error}"
                raise wheelhouse.DownloadFailed(self._failed[folder]) from None
            return words

        return self._fills.get("\0".join((folder, *args)), download)

    def pins(self, wanted: WheelSet) -> tuple[Pinned, ...]:
        """The files pip would install of ``wanted`` on the nodes, each with the sha256 the
        index gives (once); DownloadFailed saying why not."""
        options, words = self.sources(wanted)

        def pin() -> tuple[Pinned, ...]:
            try:
                return resolve(wanted.platform, options, wanted.specs)
            except wheelhouse.DownloadFailed as error:
                raise wheelhouse.DownloadFailed(f"from {words}: {error}") from None

        return self._pins.get("\0".join((*wanted.platform, *options, *wanted.specs)), pin)

    def digests(self, folder: str) -> tuple[tuple[str, str], ...]:
        """(name, sha256) of each wheel an upload of ``folder`` sends, read once per run."""
        return self._digests.get(folder, lambda: tuple(
            (path.name, _sha256(path)) for path in wheels_in(folder)))


def wheels_in(folder: str) -> list[Path]:
    """The wheels of a wheel set's folder: what is sent, fetched and served (nothing else an
    older version may have left there, such as a log with pip's command lines)."""
    return sorted(path for path in Path(folder).glob("*.whl")
                  if path.is_file() and not path.name.startswith("."))


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()
