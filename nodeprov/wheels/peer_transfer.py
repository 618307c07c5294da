"""A node's copy of a wheel set to and from its peers: serve it (``peer_scripts.SERVE``, each
file only as the one this machine hashed), fetch it from the least busy node serving it
(``peer_scripts.FETCH``, each file checked against what this machine knows)::

    why = fetch(session, distribution, "torch", action, files)  # None: fetched and checked
    serve(session, distribution, "torch", action, files)        # False: not served (warned)
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from contextlib import suppress
from typing import TYPE_CHECKING

from nodeprov.errors import HostError
from nodeprov.nodeside.peer_scripts import FETCH, SERVE
from nodeprov.remote.actions import STOP_MARKED
from nodeprov.util.units import clipped
from nodeprov.util.validate import printable
from nodeprov.wheels.peers import (
    MAX_WHEEL,
    SERVE_IDLE,
    SERVE_LIFETIME,
    Distribution,
    PeerCopy,
    WheelFile,
)
from nodeprov.wheels.written import counting_writes

if TYPE_CHECKING:
    from nodeprov.remote.session import Session
    from nodeprov.wheels.resolve import Pinned

# a fetch slower than this gives up for the next source (or the upload): a stuck node
FETCH_RATE, FETCH_SLACK = 5e6, 60.0  # bytes/s, seconds
GUESSED_SIZE = 1 << 30  # bytes per file for a fetch's deadline where no size is known
REFUSAL = 199  # characters at most of the warning that says which file a node would not serve


def serve(session: Session, distribution: Distribution, task: str, action: PeerCopy,
          files: Sequence[WheelFile]) -> bool:
    """Serve this node's copy of ``files`` to the others, under a token of this run, each file
    only if it is the one this machine hashed (``peer_scripts.SERVE``); False, with a warning
    that says why where the node refused a file, if the server did not start."""
    mark = f"nodeprov-serve-{secrets.token_hex(6)}"
    token = secrets.token_urlsafe(16)
    try:
        started = session.run([action.python, "-c", SERVE, action.remote_path, action.address,
                               str(SERVE_LIFETIME), str(SERVE_IDLE), mark, token,
                               *(word for file in files for word in (file.name, file.sha256))],
                              task=task, what="serve the wheels to the other nodes")
    except HostError:
        return False
    port, _, pid = started.stdout.strip().partition(" ")
    if started.exit_code != 0 or not (port.isdigit() and pid.isdigit()):
        refused = started.stderr.strip().splitlines()
        if refused:  # a file the node would not serve: its name and why, the node's words
            distribution.warn(session.host.name, "the other nodes get the wheels elsewhere: "
                              f"{clipped(printable(refused[-1]), REFUSAL)}")
        return False
    host = f"[{action.address}]" if ":" in action.address else action.address

    def stop() -> None:
        with suppress(HostError):  # else the server stops by itself after SERVE_IDLE seconds
            session.run(["sh", "-c", STOP_MARKED, "nodeprov-stop", pid, mark], task=task,
                        what="stop serving the wheels")

    distribution.serving(action.key, f"http://{host}:{port}/{token}/", stop)
    return True


def fetch(session: Session, distribution: Distribution, task: str, action: PeerCopy,
          files: tuple[WheelFile, ...]) -> str | None:
    """Fetch ``files`` from the least busy node serving them, each checked against what this
    machine knows (sha256, size), trying the next node after a failure; None when done, else
    why not."""
    why = "no node served them (the seed failed, or none had room in time)"
    words = [word for file in files for word in (file.name, file.sha256, str(file.size))]
    size = sum(file.size if file.size < MAX_WHEEL else GUESSED_SIZE for file in files)
    seconds = str(int(FETCH_SLACK + size / FETCH_RATE))
    while (url := distribution.acquire(action.key)) is not None:
        try:
            with counting_writes(session, task, "fetch the wheels from a node", action.python,
                                 (action.remote_path,)):
                fetched = session.run([action.python, "-c", FETCH, url, action.remote_path,
                                       seconds, *words], task=task,
                                      what="fetch the wheels from a node")
        except BaseException:  # this node's connection, not the source, failed
            distribution.release(action.key, url, good=True)
            raise
        good = fetched.exit_code == 0
        distribution.release(action.key, url, good)
        if good:
            return None
        source = url.split("/")[2]  # the node's address and port, not the run's token
        why = f"{source}: {(fetched.stderr.strip().splitlines() or ['failed'])[-1]}"
    return why


def pinned_files(pins: Sequence[Pinned]) -> tuple[WheelFile, ...]:
    """What a fetch of a resolved set must yield (sizes unknown: at most ``MAX_WHEEL``)."""
    return tuple(WheelFile(pin.filename, pin.sha256, MAX_WHEEL) for pin in pins)
