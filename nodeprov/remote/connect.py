"""Every host of a run at once: open its session and read its facts (``nodeprov facts``,
``run``, verify's job)::

    sessions, facts, errors = connect_all(hosts, SshOptions(), forks=32)
    # facts of the hosts that answered; errors: one line for each other host
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from nodeprov.errors import HostError
from nodeprov.remote.facts import Facts
from nodeprov.remote.options import SshOptions
from nodeprov.remote.session import Session
from nodeprov.util.fanout import DEFAULT_FORKS, on_every, raise_first

if TYPE_CHECKING:
    from nodeprov.inventory.model import Host
    from nodeprov.remote.hostkeys import SshFiles


def connect_all(hosts: Sequence[Host], options: SshOptions, forks: int = DEFAULT_FORKS,
                files: SshFiles | None = None
                ) -> tuple[dict[str, Session], dict[str, Facts], dict[str, str]]:
    """Open a session to every host in parallel and read its facts: (open sessions, facts,
    one-line errors of the hosts that failed). The caller closes the sessions; a second
    Ctrl-C drops the connections being made."""
    from nodeprov.remote.hostkeys import SshFiles  # lazy: Fabric is slow to import

    files = files or SshFiles()
    sessions = {host.name: Session(host, options, files) for host in hosts}

    def open_and_read(session: Session) -> Facts | str:
        try:
            session.open()
            return session.gather([])[0]
        except HostError as error:
            return str(error)

    def drop() -> None:
        for session in sessions.values():
            session.disconnect("interrupted (Ctrl-C)")

    read = dict(zip(sessions, raise_first(on_every(open_and_read, sessions.values(),
                                                   forks=forks, drop=drop)), strict=True))
    facts = {name: found for name, found in read.items() if isinstance(found, Facts)}
    errors = {name: found for name, found in read.items() if isinstance(found, str)}
    return sessions, facts, errors
