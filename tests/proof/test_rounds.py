"""The round-robin schedule: every pair once, no node twice in a round, N-1 rounds."""

from __future__ import annotations

import itertools

import pytest

from nodeprov.proof.rounds import round_robin


@pytest.mark.parametrize("count", [*range(1, 18), 32, 127, 128])
def test_every_pair_exactly_once_and_no_node_twice_in_a_round(count: int) -> None:
    names = [f"node{number}" for number in range(1, count + 1)]
    rounds = round_robin(names)
    assert len(rounds) == (0 if count < 2 else count - 1 if count % 2 == 0 else count)
    for pairs in rounds:
        in_round = [name for pair in pairs for name in pair]
        assert len(in_round) == len(set(in_round)), pairs
        assert len(pairs) == count // 2  # every node busy but one bye for odd N
    met = sorted(tuple(sorted(pair)) for pairs in rounds for pair in pairs)
    assert met == sorted(tuple(sorted(pair)) for pair in itertools.combinations(names, 2))


def test_repeated_names_are_refused() -> None:
    with pytest.raises(ValueError, match="node names repeat"):
        round_robin(["a", "b", "a"])
