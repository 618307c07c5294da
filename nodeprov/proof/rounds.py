"""Every pair of nodes in rounds of disjoint pairs: the round-robin (circle method) schedule.

    for pairs in round_robin(["node1", "node2", "node3", "node4"]):
        ...   # [("node1", "node4"), ("node2", "node3")], then two more rounds

Each node is in at most one pair per round, so a round's pairs can run at once without two of
them sharing a node's link; N nodes take N-1 rounds (N even) or N rounds with one node sitting
out each round (N odd), and every pair comes up exactly once.
"""

from __future__ import annotations

from collections.abc import Sequence

Pair = tuple[str, str]


def round_robin(names: Sequence[str]) -> list[list[Pair]]:
    """The circle method: the first node stays put, the others turn one place a round; in each
    round the i-th seat meets the i-th from the end. ``None`` fills the seat of an odd count:
    whoever meets it sits the round out.

    >>> round_robin(["a", "b", "c", "d"])
    [[('a', 'd'), ('b', 'c')], [('a', 'c'), ('d', 'b')], [('a', 'b'), ('c', 'd')]]
    >>> round_robin(["a", "b", "c"])
    [[('b', 'c')], [('a', 'c')], [('a', 'b')]]
    >>> round_robin(["a"])
    []
    """
    if len(set(names)) != len(names):
        raise ValueError(f"node names repeat: {sorted(names)}")
    seats: list[str | None] = [*names, None] if len(names) % 2 else list(names)
    rounds: list[list[Pair]] = []
    for _ in range(len(seats) - 1 if len(names) > 1 else 0):
        half = len(seats) // 2
        meetings = zip(seats[:half], reversed(seats[half:]), strict=True)
        rounds.append([(first, second) for first, second in meetings
                       if first is not None and second is not None])
        seats = [seats[0], seats[-1], *seats[1:-1]]
    return rounds
