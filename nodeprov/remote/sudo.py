"""Become root on a node: a command under sudo, the password typed at sudo's own prompt, once,
before the command starts, and never anywhere else.

Each session has a random prompt and start mark of its own (``SudoPrompt.new()``). With a
password, argv runs as::

    sudo -S -p PROMPT -- sh -c 'printf "%s\\n" "$0" >&2; exec "$@"' MARK argv...

so its stderr holds, in order: what sudo says (a first-use lecture, PROMPT, "Sorry, try
again."), MARK once sudo let the command start, then the command's own stderr. ``Answer`` types
the password when PROMPT shows on stderr before MARK, at most once (a second PROMPT is a refused
password); once MARK is seen nothing more is typed, whatever the command prints, and only then
does the command's stdin flow (``GatedInput``: sudo reads its password from the same stdin).
Without a password, ``sudo -n``: sudo fails rather than asks.

    prompt = SudoPrompt.new()
    argv = as_root(host, ["systemctl", "restart", "ssh"], prompt)
    answer = Answer(prompt, host.become_password)   # a watcher for one run, on stderr only
"""

from __future__ import annotations

import io
import secrets
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from nodeprov.inventory.model import Host

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


class Answer:
    """Types the password once at sudo's prompt, before the command started: an invoke
    watcher, fed stderr only (``capture.BoundedRemote``). Not invoke's StreamWatcher, whose
    state is per thread: ``started`` is shared with the stdin reader."""

    def __init__(self, prompt: SudoPrompt, password: str) -> None:
        self.prompt = prompt
        self._password = password
        self.answered = False
        self.started = threading.Event()  # the mark came: the command runs
        self.refused = threading.Event()  # sudo asked again: it never will

    def submit(self, stream: str) -> list[str]:
        if self.started.is_set():
            return []
        before, mark, _ = stream.partition(self.prompt.mark + "\n")
        asked = before.count(self.prompt.text)
        if mark:
            self.started.set()
        if asked > 1:
            from invoke.exceptions import ResponseNotAccepted  # lazy, as Fabric

            self.refused.set()
            raise ResponseNotAccepted("sudo refused the password")
        if asked == 1 and not self.answered and not mark:
            self.answered = True
            return [self._password + "\n"]
        return []


class GatedInput:
    """A command's stdin that gives nothing until the command started: before that, what is
    read from the channel is sudo's, for the password (invoke reads None as "not yet", and
    "" as the end: after a refused password, sudo gets the end instead)."""

    def __init__(self, text: str, answer: Answer) -> None:
        self._text = io.StringIO(text)
        self._answer = answer

    def read(self, size: int = -1) -> str | None:
        if self._answer.refused.is_set():
            return ""
        return self._text.read(size) if self._answer.started.is_set() else None


class AfterMark:
    """A live stderr stream that shows only what follows the start mark: sudo's lecture and
    prompt never reach the terminal."""

    def __init__(self, stream: TextIO, prompt: SudoPrompt) -> None:
        self._stream = stream
        self._mark = prompt.mark + "\n"
        self._held: str | None = ""

    def write(self, text: str) -> int:
        if self._held is None:
            return self._stream.write(text)
        self._held += text
        _, mark, after = self._held.partition(self._mark)
        if mark:
            self._held = None
            self._stream.write(after)
        return len(text)

    def flush(self) -> None:
        self._stream.flush()
