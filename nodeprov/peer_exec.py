"""Run a task's actions where one may be a PeerUpload: the seed uploads and serves, the
others fetch from it (``nodeprov.peers``); everything else goes to ``Session.execute``.

    read = execute(session, distribution, "torch", actions, then_read=probes)
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import suppress
from typing import TYPE_CHECKING

from nodeprov.errors import HostError
from nodeprov.peer_scripts import FETCH, SERVE
from nodeprov.peers import SERVE_IDLE, SERVE_LIFETIME, Distribution, PeerUpload
from nodeprov.remote.actions import Action, Upload

# a fetch slower than this gives up for the next source (or the upload): a stuck node
FETCH_RATE, FETCH_SLACK = 5e6, 60.0  # bytes/s, seconds

if TYPE_CHECKING:
    from nodeprov.remote.actions import Probe
    from nodeprov.remote.facts import Facts
    from nodeprov.remote.session import Session


def execute(session: Session, distribution: Distribution | None, task: str,
            actions: Sequence[Action], *, then_read: Sequence[Probe | None] | None = None
            ) -> tuple[Facts, list[str]] | None:
    """``session.execute``, with a PeerUpload taken from the seed when there is one."""
    where = next((i for i, a in enumerate(actions) if isinstance(a, PeerUpload)), None)
    if where is None or distribution is None:
        return session.execute(task, actions, then_read=then_read)
    action = actions[where]
    assert isinstance(action, PeerUpload)
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
        distribution.warn(session.host.name, f"wheels uploaded from this machine after all: "
                                             f"{why}")
        session.execute(task, [Upload(action.local_path, action.remote_path)])
    elif not seed:
        _serve(session, distribution, task, action)  # the copies spread as a tree
    return session.execute(task, actions[where + 1:], then_read=then_read)


def _seed(session: Session, distribution: Distribution, task: str, action: PeerUpload) -> None:
    """Upload as without peers, then serve; a seed whose server does not start leaves the
    others the upload."""
    session.execute(task, [Upload(action.local_path, action.remote_path)])
    if not _serve(session, distribution, task, action):
        distribution.failed(action.key)


def _serve(session: Session, distribution: Distribution, task: str, action: PeerUpload) -> bool:
    """Serve this node's copy to the others; False if the server did not start."""
    try:
        started = session.run([action.python, "-c", SERVE, action.remote_path, action.address,
                               str(SERVE_LIFETIME), str(SERVE_IDLE)], task=task,
                              what="serve the wheels to the other nodes")
    except HostError:
        return False
    port, _, pid = started.stdout.strip().partition(" ")
    if started.exit_code != 0 or not (port.isdigit() and pid.isdigit()):
        return False
    host = f"[{action.address}]" if ":" in action.address else action.address

    def stop() -> None:
        with suppress(HostError):  # else the server stops by itself after SERVE_IDLE seconds
            session.run(["kill", "--", pid], task=task, what="stop serving the wheels")

    distribution.serving(action.key, f"http://{host}:{port}/", stop)
    return True


def _fetch(session: Session, distribution: Distribution, task: str,
           action: PeerUpload) -> str | None:
    """Fetch from the least busy node serving the wheels, each file checked against this
    machine's copy, trying the next node after a failure; None when done, else why not."""
    digests = distribution.digests(action.local_path)
    pairs = [word for pair in digests for word in pair]
    size = sum(os.path.getsize(os.path.join(action.local_path, name)) for name, _ in digests)
    seconds = str(int(FETCH_SLACK + size / FETCH_RATE))
    why = "no node served them (the seed failed, or none had room in time)"
    while (url := distribution.acquire(action.key)) is not None:
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
