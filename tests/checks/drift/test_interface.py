"""The subnet interface renamed (a driver or udev update names it anew): NCCL_SOCKET_IFNAME must
follow it. verify names it, the repair runs as printed, and a fresh login has the new name."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nodeprov.testbed.cluster import Testbed
from tests.checks.drift.printed import (
    applied,
    login_env,
    named,
    rename_link,
    run_printed,
    subnet_interface,
    verify,
)

pytestmark = pytest.mark.integration
NEW_NAME = "data0"


@pytest.fixture()
def renamed(network: tuple[Testbed, Path]) -> Iterator[str]:
    """node2's subnet interface renamed NEW_NAME; its old name, given back after."""
    bed, playbook = network
    old = subnet_interface(bed, "node2")
    rename_link(bed, "node2", old, NEW_NAME)
    yield old
    rename_link(bed, "node2", NEW_NAME, old)
    applied(bed, playbook, "--limit", "node2", "--tags", "nccl_env")


def test_a_renamed_subnet_interface_is_followed(network: tuple[Testbed, Path],
                                                 renamed: str) -> None:
    bed, playbook = network
    # NCCL's "=": that name exactly; the drift is real
    assert login_env(bed, "node2", "NCCL_SOCKET_IFNAME") == f"={renamed}"

    code, lines = verify(bed, playbook)
    # the plan, and the checks of what a new session sees and selects, each with the repair
    assert code == 1
    line = named(lines, "node2", "nccl_env", "plan: ")  # the checks' lines print its repair
    assert any(f"(expected NCCL_SOCKET_IFNAME=={NEW_NAME}, GLOO_SOCKET_IFNAME={NEW_NAME})" in
               each for each in lines if each.startswith("node2 nccl_env: ")), lines

    run_printed(bed, line)
    code, lines = verify(bed, playbook)
    assert code == 0, lines
    assert login_env(bed, "node2", "NCCL_SOCKET_IFNAME") == f"={NEW_NAME}"
    assert login_env(bed, "node2", "GLOO_SOCKET_IFNAME") == NEW_NAME
