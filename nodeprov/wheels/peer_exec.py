"""Run a task's actions where one may be a PeerUpload or PeerDownload: the seed uploads or
downloads and serves, the others fetch from it (``peers``); everything else goes to
``Session.execute``.

    read = execute(session, distribution, "torch", actions, then_read=probes)
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Sequence
from contextlib import suppress
from typing import TYPE_CHECKING

from nodeprov.errors import HostError
from nodeprov.nodeside.peer_scripts import FETCH, LIST, SERVE
from nodeprov.remote.actions import STOP_MARKED, Action
from nodeprov.wheels.peers import (
    SERVE_IDLE,
    SERVE_LIFETIME,
    Distribution,
    PeerCopy,
    PeerDownload,
    PeerUpload,
    WheelFile,
    alone,
)

# a fetch slower than this gives up for the next source (or the upload): a stuck node
FETCH_RATE, FETCH_SLACK = 5e6, 60.0  # bytes/s, seconds
# a line of LIST, from a node: its names become paths on the other nodes
_LISTED = re.compile(r"([0-9a-f]{64}) ([0-9]{1,15}) ([A-Za-z0-9][A-Za-z0-9._+-]{0,254})")

if TYPE_CHECKING:
    from nodeprov.remote.actions import Probe
    from nodeprov.remote.facts import Facts
    from nodeprov.remote.session import Session


def execute(session: Session, distribution: Distribution | None, task: str,
            actions: Sequence[Action], *, then_read: Sequence[Probe | None] | None = None
            ) -> tuple[Facts, list[str]] | None:
    """``session.execute``, with a PeerUpload or PeerDownload taken from the seed when there
    is one."""
    where = next((i for i, a in enumerate(actions) if isinstance(a, PeerCopy)), None)
    if where is None or distribution is None:
        return session.execute(task, actions, then_read=then_read)
    action = actions[where]
    assert isinstance(action, PeerCopy)
    seed = distribution.seed_for(action.key, session.host.name) == session.host.name
    try:
        session.execute(task, actions[:where])
        if seed:
            _seed(session, distribution, task, action)
    except BaseException:
        if seed:
            distribution.failed(action.key)
        raise
    why = None if seed else _fetch(session, distribution, task, action)
    if why is not None:
        how = "uploaded from this machine" if isinstance(action, PeerUpload) else \
            "downloaded by this node"
        distribution.warn(session.host.name, f"wheels {how} after all: {why}")
        session.execute(task, [alone(action)])
    elif not seed:
        _serve(session, distribution, task, action)  # the copies spread as a tree
    return session.execute(task, actions[where + 1:], then_read=then_read)


def _seed(session: Session, distribution: Distribution, task: str, action: PeerCopy) -> None:
    """Upload or download as without peers, then serve; a seed whose server does not start
    (or whose download cannot be listed) leaves the others to do as without peers."""
    session.execute(task, [alone(action)])
    if isinstance(action, PeerDownload):
        files = _listed(session, task, action)
        if not files:
            distribution.failed(action.key)
            return
        distribution.downloaded(action.key, files)
    if not _serve(session, distribution, task, action):
        distribution.failed(action.key)


def _listed(session: Session, task: str, action: PeerDownload) -> tuple[WheelFile, ...]:
    """The seed's download as the others check it; nothing when the node's list is not one
    (its names become paths on the other nodes)."""
    try:
        listed = session.run([action.python, "-c", LIST, action.remote_path], task=task,
                             what="list the downloaded wheels")
    except HostError:
        return ()
    matches = [_LISTED.fullmatch(line) for line in listed.stdout.splitlines()]
    if listed.exit_code != 0 or not matches or None in matches:
        return ()
    return tuple(WheelFile(m[3], m[1], int(m[2])) for m in matches if m is not None)


def _serve(session: Session, distribution: Distribution, task: str, action: PeerCopy) -> bool:
    """Serve this node's copy to the others; False if the server did not start."""
    token = f"nodeprov-serve-{secrets.token_hex(6)}"
    try:
        started = session.run([action.python, "-c", SERVE, action.remote_path, action.address,
                               str(SERVE_LIFETIME), str(SERVE_IDLE), token], task=task,
                              what="serve the wheels to the other nodes")
    except HostError:
        return False
    port, _, pid = started.stdout.strip().partition(" ")
    if started.exit_code != 0 or not (port.isdigit() and pid.isdigit()):
        return False
    host = f"[{action.address}]" if ":" in action.address else action.address

    def stop() -> None:
        with suppress(HostError):  # else the server stops by itself after SERVE_IDLE seconds
            session.run(["sh", "-c", STOP_MARKED, "nodeprov-stop", pid, token], task=task,
                        what="stop serving the wheels")

    distribution.serving(action.key, f"http://{host}:{port}/", stop)
    return True


def _fetch(session: Session, distribution: Distribution, task: str,
           action: PeerCopy) -> str | None:
    """Fetch from the least busy node serving the wheels, each file checked against this
    machine's copy (or the seed's list of its download), trying the next node after a
    failure; None when done, else why not."""
    why = "no node served them (the seed failed, or none had room in time)"
    files = distribution.expected(action)  # this machine's copy: hashed while the seed uploads
    while (url := distribution.acquire(action.key)) is not None:
        files = files or distribution.expected(action)  # a download's: listed before served
        pairs = [word for file in files for word in (file.name, file.sha256)]
        seconds = str(int(FETCH_SLACK + sum(file.size for file in files) / FETCH_RATE))
        try:
            fetched = session.run([action.python, "-c", FETCH, url, action.remote_path, seconds,
                                   *pairs],
                                  task=task, what=f"fetch the wheels from {url}")
        except BaseException:  # this node's connection, not the source, failed
            distribution.release(action.key, url, good=True)
            raise
        good = fetched.exit_code == 0
        distribution.release(action.key, url, good)
        if good:
            return None
        why = f"{url}: {(fetched.stderr.strip().splitlines() or ['failed'])[-1]}"
    return why
