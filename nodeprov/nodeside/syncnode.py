"""The node side of ``nodeprov run --sync``: list a directory's files, receive changed ones.

nodeprov runs this file's text with the node's system ``python3 -c`` (standard library only, any
python3 from 3.8), values as arguments::

    python3 syncnode.py manifest /home/me/train
    {"train.py": [1834, "9f86d0..."], "conf/base.yaml": [210, "2c26b4..."]}
    base64 of a tar | python3 syncnode.py receive /home/me/train
    {"received": 2}

``manifest`` prints each regular file's size and sha256 under DIR (``{}`` when DIR is missing),
skipping the directories ``sync.SKIPPED`` names. ``receive`` reads a base64 tar of regular files
from stdin and puts each in place atomically (a temporary file beside it, then a rename), with
its mode; a member whose name is absolute or climbs out of DIR is refused before anything is
written.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import sys
import tarfile
import tempfile

SKIPPED = (".git", "__pycache__")


def manifest(root: str) -> dict[str, list[object]]:
    found: dict[str, list[object]] = {}
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = [d for d in subdirectories if d not in SKIPPED]
        for name in files:
            path = os.path.join(directory, name)
            if os.path.islink(path) or not os.path.isfile(path):
                continue
            digest = hashlib.sha256()
            with open(path, "rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
            found[os.path.relpath(path, root)] = [os.path.getsize(path), digest.hexdigest()]
    return found


def receive(root: str, encoded: str) -> int:
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(encoded)), mode="r") as archive:
        members = archive.getmembers()
        for member in members:
            parts = member.name.split("/")
            if not member.isfile() or member.name.startswith("/") or ".." in parts:
                raise SystemExit(f"refused tar member {member.name!r}: not a plain relative file")
        for member in members:
            target = os.path.join(root, member.name)
            os.makedirs(os.path.dirname(target), exist_ok=True)
            source = archive.extractfile(member)
            assert source is not None  # a regular file, checked above
            handle, temporary = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".nodeprov.")
            with os.fdopen(handle, "wb") as written:
                written.write(source.read())
            os.chmod(temporary, member.mode & 0o7777)
            os.replace(temporary, target)
    return len(members)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("manifest", "receive"):
        print(__doc__, file=sys.stderr)
        return 2
    command, root = argv
    if command == "manifest":
        print(json.dumps(manifest(root) if os.path.isdir(root) else {}))
    else:
        print(json.dumps({"received": receive(root, sys.stdin.read())}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
