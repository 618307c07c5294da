"""``nodeprov run --sync DIR``: the same files at the same path on every node, sending only what
changed. Two round trips per node at most: read the node's sizes and hashes, send the files
that differ in one archive (none on a second run)::

    local = local_manifest(Path("/home/me/train"))
    sent = sync_node(session, Path("/home/me/train"), local)    # ('train.py',): what changed

Files on the node that are not here stay (like rsync without --delete); the directories
``syncnode.SKIPPED`` names (.git, __pycache__) and symlinks are not sent.
"""

from __future__ import annotations

import base64
import io
import json
import tarfile
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from nodeprov.errors import CommandFailed
from nodeprov.nodeside.syncnode import manifest

if TYPE_CHECKING:
    from nodeprov.remote.session import Session

Manifest = Mapping[str, Sequence[object]]  # relative path -> [size, sha256]


def local_manifest(root: Path) -> dict[str, list[object]]:
    """Sizes and hashes of the files under ``root`` on this machine, as the node lists its own."""
    return manifest(str(root))


def plan_sync(local: Manifest, remote: Manifest) -> list[str]:
    """The files to send: missing on the node, or of another size or hash; sorted.

    >>> plan_sync({"a.py": [3, "x"], "b.py": [2, "y"]}, {"a.py": [3, "x"], "b.py": [2, "z"]})
    ['b.py']
    """
    return sorted(path for path, entry in local.items()
                  if list(remote.get(path, ())) != list(entry))


def pack(root: Path, paths: Sequence[str]) -> str:
    """The files as a gzipped tar, base64 for the node's stdin; modes kept."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for path in paths:
            archive.add(root / path, arcname=path, recursive=False)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def sync_node(session: Session, root: Path, local: Manifest) -> tuple[str, ...]:
    """Send the files of ``root`` the node lacks or has otherwise to the same path there;
    returns what was sent."""
    script = resources.files("nodeprov.nodeside").joinpath("syncnode.py").read_text()
    listed = session.run(["python3", "-c", script, "manifest", str(root)], task="sync",
                         what="read the synced directory")
    if listed.exit_code != 0:
        raise CommandFailed(session.host.name, "sync", f"list {root}", listed.exit_code,
                            listed.stderr or listed.stdout)
    sending = plan_sync(local, json.loads(listed.stdout))
    if sending:
        sent = session.run(["python3", "-c", script, "receive", str(root)],
                           stdin=pack(root, sending), task="sync", what=f"send to {root}")
        if sent.exit_code != 0:
            raise CommandFailed(session.host.name, "sync", f"send {len(sending)} files to {root}",
                                sent.exit_code, sent.stderr or sent.stdout)
    return tuple(sending)
