"""A seed whose folder holds a hard link to another file of the node (root's, where
fs.protected_hardlinks=0; made here as root) serves nothing and says why; the other nodes get
the wheels from this machine, and the file never leaves the node (the server's own checks:
tests/nodeside/test_peer_scripts.py)."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nodeprov.remote.actions import Action, Upload
from nodeprov.wheels.peers import Distribution
from tests.nodeside.test_peer_scripts import SIX
from tests.nodeside.test_peer_scripts import secret as secret  # the fixture: root's own file
from tests.wheels.test_peer_exec import LocalSession, apply, held, uploaded
from tests.wheels.test_peer_exec import wheels as wheels  # the fixture: this machine's copy


class LinkingSession(LocalSession):
    """A seed whose login user, once the upload is there, swaps a wheel for a hard link to
    ``secret`` (only the folder's owner's rights needed where fs.protected_hardlinks=0)."""

    def __init__(self, name: str, secret: Path) -> None:
        super().__init__(name)
        self.secret = secret

    def execute(self, task: str, actions: Sequence[Action], *, then_read: Any = None) -> None:
        super().execute(task, actions, then_read=then_read)
        for action in actions:
            if isinstance(action, Upload):
                (Path(action.remote_path) / SIX).unlink()
                os.link(self.secret, Path(action.remote_path) / SIX)


def test_a_seed_that_would_serve_a_hard_link_serves_nothing_and_says_why(
        wheels: Path, secret: Path) -> None:
    distribution = Distribution()
    distribution.seed_for("set", "node1")
    apply(distribution, LinkingSession("node1", secret), wheels)
    assert distribution.warnings_for("node1") == [
        f"the other nodes get the wheels elsewhere: {SIX}: not served: a hard link (2 names): "
        "it may be another file of this node, which its peers must not be sent"]
    peers = [LocalSession("node2"), LocalSession("node3")]
    threads = [threading.Thread(target=apply, args=(distribution, peer, wheels))
               for peer in peers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert all(uploaded(peer) == 1 for peer in peers)  # from this machine, not the seed
    assert all(held(wheels, peer.host.name)[SIX] == b"six" for peer in peers)
    distribution.close()
