"""Opening a host's SSH connection: tried again, with backoff, while sshd turns it away, within
the connect timeout; every failure said in one line, and no library's traceback on the terminal.

sshd past its ``MaxStartups`` closes a new connection before its banner (``Exceeded
MaxStartups``), as it does while it restarts, and a host mid-boot refuses or resets; many nodes
behind one jump host meet this at once. Such a connection is tried again after a pause that
doubles (from 0.1 s, at most 2 s, jittered so that the hosts' retries spread), until the connect
timeout; anything else (a refused key, a failed login, a timeout) is final at once::

    connection = connect(host, SshOptions(), files)   # Unreachable after the last try
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nodeprov.errors import HostError, Unreachable
from nodeprov.remote import hostkeys
from nodeprov.remote.proxycommand import ProxyCommandFailed

if TYPE_CHECKING:
    from nodeprov.inventory.model import Host
    from nodeprov.remote.hostkeys import SshFiles
    from nodeprov.remote.options import SshOptions

FIRST_PAUSE = 0.1  # s before the second try
LONGEST_PAUSE = 2.0
_BANNER = "Error reading SSH protocol banner"
_CANNOT_RUN = (126, 127)  # a ProxyCommand not found or not executable: no try can help


def quiet_library_logs() -> None:
    """Keep paramiko's log off the terminal: its transport thread logs a traceback for every
    failed connection, which Python prints on stderr for want of a handler. Each failure
    reaches the user as the one line this module raises."""
    logger = logging.getLogger("paramiko")
    if not any(isinstance(handler, logging.NullHandler) for handler in logger.handlers):
        logger.addHandler(logging.NullHandler())
    logger.propagate = False


def turned_away(error: BaseException) -> bool:
    """Did the server (or the ProxyCommand's way to it) refuse, reset or close the connection
    before its SSH banner?"""
    if isinstance(error, ProxyCommandFailed):
        return error.code is not None and error.code not in _CANNOT_RUN
    if isinstance(error, (ConnectionRefusedError, ConnectionResetError, ConnectionAbortedError,
                          BrokenPipeError, EOFError)):
        return True
    if type(error).__name__ == "NoValidConnectionsError":  # paramiko: refused on every address
        return all(isinstance(each, ConnectionRefusedError)
                   for each in getattr(error, "errors", {}).values())
    return str(error).startswith(_BANNER) and not isinstance(error.__context__, TimeoutError)


def reason(error: BaseException) -> str:
    """One line for a failed connection (paramiko glues its cause onto its banner message).

    >>> reason(ConnectionRefusedError(111, "Connection refused"))
    'connection refused'
    """
    if str(error).startswith(_BANNER):
        cause = error.__context__
        if isinstance(cause, TimeoutError):
            return "no SSH banner in time"
        if isinstance(cause, ConnectionResetError):
            return "the connection was reset before the SSH banner"
        return "the connection was closed before the SSH banner"
    if isinstance(error, ConnectionRefusedError) or type(error).__name__ == (
            "NoValidConnectionsError"):
        return "connection refused"
    if isinstance(error, ConnectionResetError):
        return "the connection was reset"
    if isinstance(error, EOFError):
        return "the server closed the connection"
    if isinstance(error, TimeoutError):
        return "timed out"
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def connect(host: Host, options: SshOptions, files: SshFiles, *,
            clock: Callable[[], float] = time.monotonic,
            pause: Callable[[float], None] = time.sleep) -> Any:
    """An open Fabric Connection to ``host`` (``hostkeys.open_once``), tried again while sshd
    turns it away and the connect timeout allows; Unreachable says why in one line."""
    quiet_library_logs()
    started = clock()
    deadline = started + (host.timeout or options.connect_timeout)  # ansible_ssh_timeout, -T
    wait = FIRST_PAUSE
    tries = 0
    while True:
        tries += 1
        try:
            return hostkeys.open_once(host, options, files,
                                      timeout=max(deadline - clock(), 0.5))
        except HostError:
            raise
        except Exception as error:
            again = turned_away(error)
            if again and clock() + wait < deadline:
                pause(wait * random.uniform(0.5, 1.0))
                wait = min(wait * 2, LONGEST_PAUSE)
                continue
            tried = f"; {tries} tries in {clock() - started:.0f} s" if tries > 1 else ""
            raise Unreachable(host.name, "", f"cannot connect to {host.address}:"
                              f"{host.port or 22}: {reason(error)}{tried}",
                              hint=_hint(error, again)) from None


def _hint(error: BaseException, turned: bool) -> str:
    if isinstance(error, ProxyCommandFailed):
        return "run the ProxyCommand yourself to see why"
    if turned:
        return "is sshd running there, and not turning new connections away (MaxStartups)?"
    return "is sshd running and the address right?"
