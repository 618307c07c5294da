from pathlib import Path

import pytest

from nodeprov.testbed.naming import IFNAMSIZ, MAX_NODES, OUTSIDER, Names, node_names


def test_names_fit_the_interface_limit_for_the_largest_testbed() -> None:
    names = Names.for_dir(Path("/srv/a/very/long/testbed/directory/name"))
    links = [names.bridge, names.veth(OUTSIDER), *map(names.veth, node_names(MAX_NODES))]
    assert max(map(len, links)) <= IFNAMSIZ
    assert len(set(links)) == len(links)


def test_different_directories_give_different_names() -> None:
    first, second = Names.for_dir(Path("/srv/tb1")), Names.for_dir(Path("/srv/tb2"))
    assert first.prefix != second.prefix
    assert first.bridge != second.bridge and first.netns("node1") != second.netns("node1")


def test_names_are_stable_for_a_directory() -> None:
    names = Names.for_dir(Path("/srv/nodeprov-testbed"))
    assert (names.bridge, names.netns("node3"), names.veth("node3"), names.veth(OUTSIDER)) == (
        "nte712e1br", "nte712e1-node3", "nte712e1n3", "nte712e1o")


def test_a_too_long_interface_name_is_refused() -> None:
    with pytest.raises(ValueError, match="longer than 15"):
        Names("nt123456").veth("node1234567")


def test_node_names() -> None:
    assert node_names(3) == ["node1", "node2", "node3"]
