"""``nodeprov run --sync DIR``: the same files at the same path on every node, sending only what
changed, at the link's speed. Per node: one round trip reads its sizes and hashes
(``nodeside/syncnode.py manifest``), one sends what differs (``receive``) as one stream on a
channel of its own, in 1 MiB writes (``Session.converse``). The files to send are framed once
per distinct set into a temporary file here, which every node's sender reads::

    done = sync_nodes(sessions, Path("/home/me/train"), as_login={"node1": True}, stop=stop,
                      progress=SyncBars(console))
    done["node1"]     # Synced(files=2, bytes=3712, seconds=0.4), or the node's error

Files on the node that are not here stay (like rsync without --delete); ``.git``,
``__pycache__`` and links are not sent. What the node checks before it writes anything, as the
job's user (no link followed, nothing someone else could write), is syncnode's.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import IO, TYPE_CHECKING, Protocol

from nodeprov.errors import CommandFailed, HostError
from nodeprov.nodeside.syncnode import REFUSED, SKIPPED
from nodeprov.remote.channel import Terms
from nodeprov.util.fanout import on_every
from nodeprov.util.safejson import loads_object

if TYPE_CHECKING:
    from nodeprov.remote.session import Session

Manifest = Mapping[str, Sequence[object]]  # relative path -> [size, sha256]
BLOCK = 1 << 20  # bytes per write to a node's channel


class Progress(Protocol):
    """Where the transfers say how far each is (from its sender's thread) and how it ended,
    then the sync's one-line summary (commands.run.SyncBars: util.progress.Transfers)."""

    def advance(self, node: str, done: int, total: int) -> None: ...

    def end(self, node: str, failed: bool) -> None: ...

    def close(self, summary: str) -> None: ...


@dataclass(frozen=True)
class Synced:
    """What one node received: files, bytes on the wire, seconds from the first read."""

    files: int
    bytes: int
    seconds: float


def local_manifest(root: Path) -> dict[str, list[object]]:
    """Size and sha256 of each regular file under ``root`` here (links and SKIPPED folders
    left out), as a node lists its own."""
    found: dict[str, list[object]] = {}
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(name for name in subfolders if name not in SKIPPED)
        for name in sorted(files):
            path = Path(folder, name)
            if path.is_symlink() or not path.is_file():
                continue
            digest = hashlib.sha256()
            with path.open("rb") as data:
                for block in iter(lambda: data.read(BLOCK), b""):
                    digest.update(block)
            found[str(path.relative_to(root))] = [path.stat().st_size, digest.hexdigest()]
    return found


def plan_sync(local: Manifest, remote: Manifest) -> list[str]:
    """The files to send: missing on the node, or of another size or hash; sorted.

    >>> plan_sync({"a.py": [3, "x"], "b.py": [2, "y"]}, {"a.py": [3, "x"], "b.py": [2, "z"]})
    ['b.py']
    """
    return sorted(path for path, entry in local.items()
                  if list(remote.get(path, ())) != list(entry))


def frame(root: Path, paths: Sequence[str], into: IO[bytes]) -> int:
    """Write ``paths`` as syncnode reads them: per file a JSON line ``[path, size, mode]`` and
    its bytes; an empty line ends them. Returns the bytes written."""
    for path in paths:
        with (root / path).open("rb") as data:
            size = os.fstat(data.fileno()).st_size
            into.write(json.dumps([path, size, stat.S_IMODE(os.fstat(data.fileno()).st_mode)])
                       .encode() + b"\n")
            left = size
            while left:
                block = data.read(min(left, BLOCK))
                if not block:
                    raise OSError(f"{root / path} shrank while it was read; send again")
                into.write(block)
                left -= len(block)
    into.write(b"\n")
    into.flush()  # the senders read it by descriptor
    return into.tell()


def sync_nodes(sessions: Mapping[str, Session], root: Path, *, as_login: Mapping[str, bool],
               stop: threading.Event, progress: Progress | None = None
               ) -> dict[str, Synced | Exception]:
    """Bring ``root`` to every node of ``as_login`` (True: as the login user, else root); each
    node's Synced or error. ``stop`` (Ctrl-C) ends the transfers at their next block; the
    nodes then keep what they had."""
    started = time.monotonic()
    script = resources.files("nodeprov.nodeside").joinpath("syncnode.py").read_text()
    names = list(as_login)
    local = local_manifest(root)

    def listed(name: str) -> list[str]:
        found = sessions[name].run(["python3", "-I", "-c", script, "manifest", str(root)],
                                   task="sync", what=f"read {root}", as_login=as_login[name])
        _check(name, found.exit_code, found.stderr or found.stdout, f"read {root}")
        return plan_sync(local, loads_object(found.stdout, what="the node's manifest"))

    results: dict[str, Synced | Exception] = {}
    sending: dict[str, tuple[str, ...]] = {}
    for name, listing in zip(names, on_every(listed, names, stop=stop), strict=True):
        if isinstance(listing, Exception):
            results[name] = listing
        elif listing:
            sending[name] = tuple(listing)
        else:
            results[name] = Synced(0, 0, time.monotonic() - started)
    with contextlib.ExitStack() as spools_open:
        spools: dict[tuple[str, ...], tuple[IO[bytes], int]] = {}
        for paths in dict.fromkeys(sending.values()) if not stop.is_set() else ():
            spool = spools_open.enter_context(tempfile.TemporaryFile(prefix="nodeprov-sync-"))
            spools[paths] = spool, frame(root, paths, spool)

        def send(name: str) -> Synced:
            spool, size = spools[sending[name]]
            what = f"send {len(sending[name])} files to {root}"
            token = secrets.token_hex(8)
            failed = True
            try:
                received = sessions[name].converse(
                    ["python3", "-I", "-c", script, "receive", str(root), token], token,
                    Terms(send=lambda write: _stream(spool, size, write, stop, progress, name)),
                    task="sync", what=what, as_login=as_login[name])
                _check(name, received.exit_code, received.stderr or received.stdout, what)
                failed = False
            finally:
                if progress is not None:
                    progress.end(name, failed)
            return Synced(len(sending[name]), size, time.monotonic() - started)

        if spools:
            results.update(zip(sending, on_every(send, sending, stop=stop), strict=True))
    if stop.is_set():
        raise KeyboardInterrupt
    return {name: results[name] for name in names}


def summary(done: Mapping[str, Synced | Exception]) -> str:
    """One line for what the sync did.

    >>> summary({"node1": Synced(2, 3 << 20, 1.5), "node2": Synced(0, 0, 0.2)})
    'sync: 2 files (3.0 MB) to 1 of 2 nodes in 1.5 s'
    """
    failed = sum(isinstance(each, Exception) for each in done.values())
    if failed:
        return f"sync: failed on {failed} of {len(done)} nodes"
    sent = [each for each in done.values() if isinstance(each, Synced) and each.files]
    if not sent:
        return f"sync: nothing to send, {len(done)} nodes have every file"
    files = max(each.files for each in sent)
    return (f"sync: {files} file{'s' if files > 1 else ''} "
            f"({max(each.bytes for each in sent) / (1 << 20):.1f} MB) to {len(sent)} of "
            f"{len(done)} nodes in {max(each.seconds for each in sent):.1f} s")


def _stream(spool: IO[bytes], size: int, write: Callable[[bytes], None], stop: threading.Event,
            progress: Progress | None, name: str) -> None:
    """The spool to a node in BLOCK writes (each sender reads at its own offset)."""
    offset = 0
    while offset < size:
        if stop.is_set():
            raise InterruptedError("interrupted")
        block = os.pread(spool.fileno(), min(BLOCK, size - offset), offset)
        if not block:
            raise OSError(f"the spool ended at {offset} of {size} bytes")
        write(block)
        offset += len(block)
        if progress is not None:
            progress.advance(name, offset, size)


def _check(name: str, exit_code: int, said: str, what: str) -> None:
    if exit_code == REFUSED:  # the node's own words: why it will not write there
        raise HostError(name, "sync", said.strip().splitlines()[-1])
    if exit_code != 0:
        raise CommandFailed(name, "sync", what, exit_code, said, hint="" if exit_code != 1 else
                            "the files are written as the job's user: the login user, unless "
                            "the inventory says run_as_root")
