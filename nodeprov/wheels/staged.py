"""Root installs only from its own copy of what was uploaded, each file checked on the way.

    folder = root_copy("/var/cache/nodeprov/wheelhouse/cpu-torch-2.13.0")   # "...0.root"
    stage(session, "torch", "python3", upload_folder, folder, distribution.expected(copy))

The upload folder belongs to the login user (SFTP writes as that user), so a process of that
user could replace a wheel between upload and install. Root therefore copies each file this
machine sent into a folder of its own (0700 from birth, beside the upload folder, under
root's ``/var/cache/nodeprov``), hashing the bytes as it copies them, and installs from that
copy alone: the sha256 compared is the one this machine computed over its own files
(``ThisMachine.digests``), never a list from the node or a peer. A file that is missing, not
a plain file, larger than sent, or whose sha256 differs fails the node's task in one line
naming it (``WheelChanged``), and root's folder is removed: nothing is installed from it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from nodeprov.errors import HostError
from nodeprov.util.redact import mask_urls
from nodeprov.util.units import clipped
from nodeprov.wheels.peers import WheelFile

if TYPE_CHECKING:
    from nodeprov.remote.session import Session

# argv: the upload folder, root's folder, then name, sha256, size for each file. Copies what
# it hashes (a file replaced while being read is caught: the bytes hashed are the bytes
# kept); on a bad file prints "INDEX WHY" and leaves no folder of its own behind.
STAGE = r"""import hashlib, os, shutil, stat, sys
upload, staged, *files = sys.argv[1:]
shutil.rmtree(staged, ignore_errors=True)
os.mkdir(staged, 0o700)
os.chmod(staged, 0o700)
def refuse(index, why):
    shutil.rmtree(staged, ignore_errors=True)
    print(index, why)
    sys.exit(3)
for index in range(len(files) // 3):
    name, sha256, size = files[3 * index:3 * index + 3]
    try:
        fd = os.open(os.path.join(upload, name), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        refuse(index, "missing")
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        refuse(index, "kind")
    digest, count = hashlib.sha256(), 0
    with os.fdopen(fd, "rb") as source, open(os.path.join(staged, name), "xb") as target:
        while chunk := source.read(1 << 20):
            count += len(chunk)
            if count > int(size):
                refuse(index, "size")
            digest.update(chunk)
            target.write(chunk)
    if digest.hexdigest() != sha256:
        refuse(index, "sha256")
"""
_REFUSED = re.compile(r"(\d{1,9}) (missing|kind|size|sha256)")
_WHY = {"missing": "is missing", "kind": "is not a plain file",
        "size": "is larger than the file this machine sent",
        "sha256": "does not have the sha256 of the file this machine sent"}


class WheelChanged(HostError):
    """A file in the upload folder is not what this machine sent: nothing is installed
    from it, even where the copy was optional."""


def root_copy(folder: str) -> str:
    """Root's own folder for the files uploaded into ``folder``, beside it.

    >>> root_copy("/var/cache/nodeprov/uv-0.13.9.upload")
    '/var/cache/nodeprov/uv-0.13.9.upload.root'
    """
    return f"{folder}.root"


def stage(session: Session, task: str, python: str, upload: str, staged: str,
          files: Sequence[WheelFile]) -> None:
    """Copy ``files`` from ``upload`` into root's ``staged`` folder, each checked against
    this machine's sha256 and size; ``WheelChanged`` naming the first bad one, a plain
    ``HostError`` where the copy could not be made at all."""
    words = [word for file in files for word in (file.name, file.sha256, str(file.size))]
    done = session.run([python, "-c", STAGE, upload, staged, *words], task=task,
                       what="copy the uploaded wheels into root's folder, checking each")
    if done.exit_code == 0:
        return
    lines = done.stdout.strip().splitlines()
    refused = _REFUSED.fullmatch(lines[-1].strip()) if lines else None
    if refused is not None and int(refused[1]) < len(files):  # the node names an index only
        name = files[int(refused[1])].name
        raise WheelChanged(session.host.name, task, f"{name} in {upload} {_WHY[refused[2]]}: "
                           "changed on the node after the upload? nothing was installed",
                           hint="look for a process of the login user writing there")
    tail = (mask_urls(done.stderr).strip().splitlines() or [f"exited {done.exit_code}"])[-1]
    # not a changed file (no room, no python): an optional copy's usual failure, a warning
    raise HostError(session.host.name, task, f"could not copy the wheels from {upload} into "
                    f"{staged}: {clipped(tail, 200)}")
