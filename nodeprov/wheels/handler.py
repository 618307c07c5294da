"""The wheels' own actions as the engine runs them: a peer copy or download, and an install
whose failure says what could not be installed from where (``peer_exec``); one
``Distribution`` per run decides which node seeds each wheel set. ``tasks/registry.py`` lists
it; a task reads the run's Distribution as ``ctx.state(Distribution)``.
"""

from __future__ import annotations

from nodeprov.remote.handlers import ActionHandler
from nodeprov.wheels.installer import Install
from nodeprov.wheels.peer_exec import execute
from nodeprov.wheels.peers import Distribution, PeerDownload, PeerUpload

HANDLER = ActionHandler((PeerUpload, PeerDownload, Install), Distribution, execute)
