"""Become root on a node: a command under sudo, the password typed at sudo's own prompt, once,
before the command starts, and never anywhere else.

Each session has a random prompt and start mark of its own (``SudoPrompt.new()``). With a
password, argv runs as::

    sudo -S -p PROMPT -- sh -c 'printf "%s\\n" "$0" >&2; exec "$@"' MARK argv...

so its stderr holds, in order: what sudo says (a first-use lecture, PROMPT, "Sorry, try
again."), MARK once sudo let the command start, then the command's own stderr. ``Answer`` types
the password when PROMPT shows on stderr before MARK, at most once (a second PROMPT is a refused
password); once MARK is seen nothing more is typed, whatever the command prints. Data for a
command's stdin goes only by ``remote.channel.converse``, after the command said it started.
Without a password, ``sudo -n``: sudo fails rather than asks.

    prompt = SudoPrompt.new()
    argv = as_root(host, ["systemctl", "restart", "ssh"], prompt)
    answer = Answer(prompt, host.become_password)   # a watcher for one run, on stderr only
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from nodeprov.errors import HostError, NodeprovError

if TYPE_CHECKING:
    from nodeprov.inventory.model import Host

# for sudo to check the password (PAM, LDAP) and start the command: a last resort (a refused
# password is seen at once), so generous enough for a node or machine saturated by a big run
START_WAIT = 120.0
# prints the start mark ($0) on stderr, then becomes the command
_STARTED = 'printf "%s\\n" "$0" >&2; exec "$@"'


@dataclass(frozen=True)
class SudoPrompt:
    """A session's sudo prompt and start mark: random, so no command can know them before it
    runs (a command running as root could read them in sudo's argv, but only once it runs)."""

    text: str = field(repr=False)
    mark: str = field(repr=False)

    @classmethod
    def new(cls) -> SudoPrompt:
        token = secrets.token_hex(16)
        return cls(f"[sudo password for nodeprov {token}]", f"nodeprov-started-{token}")

    def command_stderr(self, stderr: str) -> str:
        """What the command wrote to stderr: what follows the mark; without the mark (sudo
        never started it), what sudo said, its prompts left out."""
        before, mark, after = stderr.partition(self.mark + "\n")
        return after if mark else before.replace(self.text, "")


def as_root(host: Host, argv: Sequence[str], prompt: SudoPrompt, *,
            mark: bool = True) -> list[str]:
    """argv under sudo when the host says become (as given otherwise). ``mark=False``: the
    command says itself that it started (the run-lock holder prints "started")."""
    if not host.become:
        return list(argv)
    if not host.become_password:
        return ["sudo", "-n", "--", *argv]
    started = ["sh", "-c", _STARTED, prompt.mark] if mark else []
    return ["sudo", "-S", "-p", prompt.text, "--", *started, *argv]


class SudoRefused(NodeprovError):
    """sudo asked for the password again, or asked with none to give (``refused`` says so)."""


class SudoGate:
    """The one rule for a become password, fed everything a command wrote on stderr so far:
    the password is typed once, at sudo's prompt, before the start mark; a second prompt (or a
    prompt with no password to give) is SudoRefused; once the mark came, nothing, whatever the
    command prints. ``Answer`` (invoke's runner), ``channel.converse`` and the run lock use it.

        gate = SudoGate(prompt.text, password, mark=prompt.mark + "\n")
        gate.reply(stderr_so_far)   # the line to type now, or ""
    """

    def __init__(self, prompt: str, password: str, mark: str | None = None) -> None:
        self.prompt, self.mark, self._password = prompt, mark, password
        self.answered = False
        self.started = False  # the mark came (or the caller saw the command start)

    def reply(self, stderr: str) -> str:
        if self.started or not self.prompt:
            return ""
        before, mark, _ = stderr.partition(self.mark) if self.mark else (stderr, "", "")
        self.started = bool(mark)
        if before.count(self.prompt) > self.answered:
            if self.answered or not self._password:
                raise SudoRefused()
            if not mark:
                self.answered = True
                return self._password + "\n"
        return ""


class Answer:
    """Types the password once at sudo's prompt, before the command started: an invoke
    watcher, fed stderr only (``capture.BoundedRemote``)."""

    def __init__(self, prompt: SudoPrompt, password: str) -> None:
        self.gate = SudoGate(prompt.text, password, mark=prompt.mark + "\n")

    @property
    def started(self) -> bool:
        return self.gate.started

    def submit(self, stream: str) -> list[str]:
        try:
            typed = self.gate.reply(stream)
        except SudoRefused:
            from invoke.exceptions import ResponseNotAccepted  # lazy, as Fabric

            raise ResponseNotAccepted("sudo refused the password") from None
        return [typed] if typed else []


def refused(node: str, task: str, what: str) -> HostError:
    """The error for a password sudo would not take (asked again), on ``what``."""
    return HostError(node, task, f"sudo refused the password ({what})",
                     hint="is ansible_become_password right?")
