"""Action kinds beyond the session's own: a room that defines its own actions (the wheels' peer
copies and installs) says how a task's actions that include them run, and what state one run
keeps for them::

    HANDLER = ActionHandler((PeerUpload, PeerDownload, Install), Distribution, execute)

``tasks/registry.py`` lists every room's handler once; the engine builds its table of them
(``nodeprov.engine.handlers``), so the engine and the shape of a task know no room by name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from nodeprov.remote.actions import Action

if TYPE_CHECKING:
    from nodeprov.remote.actions import Probe
    from nodeprov.remote.facts import Facts
    from nodeprov.remote.session import Session


class RunState(Protocol):
    """What a room keeps for one run: the warnings it owes a host's task (those since the last
    call: each is said once), and its end (``close``: nothing it started keeps running)."""

    def warnings_for(self, host: str) -> list[str]: ...

    def close(self) -> None: ...


S = TypeVar("S", bound=RunState)
Read = tuple["Facts", list[str]] | None  # what ``Session.execute`` read after the actions


@dataclass(frozen=True)
class ActionHandler(Generic[S]):
    """``kinds``: the action classes only ``execute`` can run; it gets a task's actions whenever
    one of them is of such a kind, and the run's state (one ``new_state()`` per run)."""

    kinds: tuple[type[Action], ...]
    new_state: Callable[[], S]
    execute: Callable[[Session, S, str, Sequence[Action], Sequence[Probe | None] | None], Read]

    def handles(self, actions: Sequence[Action]) -> bool:
        return any(isinstance(action, self.kinds) for action in actions)


AnyHandler = ActionHandler[Any]
