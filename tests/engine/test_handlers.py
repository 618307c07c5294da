"""The engine's table of action handlers: a room's own kinds go to its handler with the run's
state, everything else to the session; the registry's table holds the wheels' kinds."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from test_runner import FakeNode

from nodeprov.engine.handlers import ActionTable
from nodeprov.remote.actions import Action, Probe, Run, Write
from nodeprov.remote.handlers import ActionHandler, Read
from nodeprov.remote.session import Session
from nodeprov.tasks.registry import ACTION_HANDLERS
from nodeprov.wheels import peer_exec
from nodeprov.wheels.installer import Install
from nodeprov.wheels.peers import Distribution, PeerDownload, PeerUpload


@dataclass(frozen=True)
class Ring(Run):
    """A room's own action, which the session alone cannot run."""


class Bells:
    """A room's state for one run: what it ran, what it owes each host, whether it ended."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, tuple[Action, ...]]] = []
        self.closed = False

    def warnings_for(self, host: str) -> list[str]:
        return [f"{host}: rang {len(self.ran)} times"]

    def close(self) -> None:
        self.closed = True


def ring(session: Session, bells: Bells, task: str, actions: Sequence[Action],
         then_read: Sequence[Probe | None] | None) -> Read:
    bells.ran.append((task, tuple(actions)))
    return None


def test_a_rooms_kind_goes_to_its_handler_with_the_runs_state_the_rest_to_the_session() -> None:
    table = ActionTable((ActionHandler((Ring,), Bells, ring),))
    node = FakeNode({})
    session = cast(Session, node)
    table.execute(session, "plain", [Write("/etc/motd", "hi\n")])
    assert node.texts == {"/etc/motd": "hi\n"} and node.calls == ["execute"]
    mixed: list[Action] = [Write("/etc/motd", "again\n"), Ring(("bell",))]
    assert table.execute(session, "bells", mixed) is None
    (bells,) = table.states.values()
    assert isinstance(bells, Bells) and bells.ran == [("bells", tuple(mixed))]
    assert node.calls == ["execute"]  # the handler ran the whole list, the session nothing
    assert table.warnings_for("node1") == ["node1: rang 1 times"]
    table.close()
    assert bells.closed


def test_each_table_is_one_run_with_states_of_its_own() -> None:
    handler = ActionHandler((Ring,), Bells, ring)
    first, second = ActionTable((handler,)), ActionTable((handler,))
    assert first.states[Bells] is not second.states[Bells]


def test_the_registry_lists_the_wheels_kinds_and_their_distribution() -> None:
    table = ActionTable(ACTION_HANDLERS)
    assert isinstance(table.states[Distribution], Distribution)
    (wheels,) = ACTION_HANDLERS
    assert wheels.execute is peer_exec.execute
    install = Install(("sh", "-c", "true"), what="torch")
    for action in (PeerUpload("/w", "/n", key="k"), PeerDownload(("pip",), key="k"), install):
        assert wheels.handles([Write("/etc/motd", ""), action]), action
    assert not wheels.handles([Run(("true",)), Write("/etc/motd", "")])
    table.close()
