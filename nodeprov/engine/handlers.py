"""The engine's table of action handlers: the rooms' own action kinds (``tasks/registry.py``
lists them), each with its state for this run; everything else goes to ``Session.execute``::

    table = ActionTable(ACTION_HANDLERS)
    read = table.execute(session, "torch", actions, then_read=probes)
    ...
    table.close()                      # no room keeps serving after the run
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from nodeprov.remote.handlers import AnyHandler, Read, RunState

if TYPE_CHECKING:
    from nodeprov.remote.actions import Action, Probe
    from nodeprov.remote.session import Session


class ActionTable:
    """One run's handlers and their states; a task's actions go to the handler of their kinds.

    >>> table = ActionTable(())
    >>> table.states, table.warnings_for("node1")
    ({}, [])
    """

    def __init__(self, handlers: Sequence[AnyHandler]) -> None:
        self._handlers = [(handler, handler.new_state()) for handler in handlers]

    @property
    def states(self) -> Mapping[type, RunState]:
        """Each room's state by its type, as a task reads it (``Context.state``)."""
        return {type(state): state for _, state in self._handlers}

    def execute(self, session: Session, task: str, actions: Sequence[Action],
                then_read: Sequence[Probe | None] | None = None) -> Read:
        """``session.execute``, or the handler whose kinds are among ``actions``."""
        for handler, state in self._handlers:
            if handler.handles(actions):
                return handler.execute(session, state, task, actions, then_read)
        return session.execute(task, actions, then_read=then_read)

    def warnings_for(self, host: str) -> list[str]:
        """What the handlers did instead for ``host`` (a fast path that failed), said once."""
        return [warning for _, state in self._handlers for warning in state.warnings_for(host)]

    def close(self) -> None:
        for _, state in self._handlers:
            state.close()
