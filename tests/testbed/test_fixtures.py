"""The shared fixtures other integration tests build on."""

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nodeprov.inventory import load_inventory
from nodeprov.remote.options import SshOptions
from nodeprov.remote.session import Session
from nodeprov.testbed.cluster import Testbed

pytestmark = pytest.mark.integration


def test_the_session_testbed_has_three_nodes_and_the_outsider(testbed: Testbed) -> None:
    assert testbed.nodes == ["node1", "node2", "node3"]
    assert testbed.inventory_path == testbed.dir / "inventory.yaml"
    assert testbed.ssh_config_path == testbed.dir / "ssh_config"
    assert testbed.dir.parent == Path("/srv")
    for name in testbed.nodes:
        assert testbed.ssh(name, "hostname").stdout == f"{name}\n"
        assert testbed.exec(name, "hostname").stdout == f"{name}\n"
    assert testbed.exec("outsider", "true").returncode == 0
    assert testbed.exec("node1", "cat", input="through stdin").stdout == "through stdin"


def test_nodeprovs_own_ssh_session_reaches_the_nodes(testbed: Testbed) -> None:
    for host in load_inventory(testbed.inventory_path).hosts:
        with Session(host, SshOptions()) as session:
            result = session.run(["sh", "-c", 'hostname; echo "$1"', "-", "quoted 'arg'"])
        assert (result.exit_code, result.stdout) == (0, f"{host.name}\nquoted 'arg'\n")


def test_ssh_passes_arguments_through_unmangled(testbed: Testbed) -> None:
    result = testbed.ssh("node2", "printf", "%s|", "a b", "$HOME", "it's")
    assert result.stdout == "a b|$HOME|it's|"


@pytest.fixture
def checked_gone() -> Iterator[list[Testbed]]:
    """Testbeds to check are gone; requested before make_testbed, so it tears down after it."""
    made: list[Testbed] = []
    yield made
    assert made
    for bed in made:
        assert not bed.dir.exists()
        assert not Path("/run/netns", bed.state.nodes[0].netns).exists()
        assert bed.state.nodes[0].init is not None and not bed.state.nodes[0].init.alive()


def test_make_testbed_takes_down_what_it_made(checked_gone: list[Testbed],
                                              make_testbed: Callable[..., Testbed]) -> None:
    checked_gone.extend([make_testbed(nodes=1), make_testbed(nodes=2, outsider=True)])
    assert [bed.ssh("node1", "true").returncode for bed in checked_gone] == [0, 0]
    assert checked_gone[1].exec("outsider", "true").returncode == 0
