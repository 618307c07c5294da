"""A firewall drift with the verification job (#32's known bug): a user's deny of a peer above
ours made the matrix fail while the repair it printed, apply --tags firewall, changed nothing.
verify with the job names the rule by hand; removed as printed, verify with the job (matrix,
torchrun, all-reduce) exits 0. The default playbook, torch from this machine's mirrors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from nodeprov.testbed.cluster import Testbed
from tests.checks.drift.printed import applied, named, run_as_printed, verify
from tests.tasks.torch.test_torch import TEST_VENV, mirror

pytestmark = pytest.mark.integration
# a CPU-bound test cluster's bandwidth halves when other work runs: a drop is not this test's
JOB_VARS = {"job_max_bytes": 1 << 20, "job_timeout": 240, "bandwidth_drop": 0.9}


@pytest.fixture(scope="module")
def site(network: tuple[Testbed, Path], tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[tuple[Testbed, Path]]:
    """The default playbook applied (torch and the job included); its inventory's path."""
    bed, _ = network
    inventory = yaml.safe_load(bed.inventory_path.read_text())
    inventory["all"]["vars"].update({**mirror(), **JOB_VARS})
    path = tmp_path_factory.mktemp("site") / "inventory.yaml"
    path.write_text(yaml.safe_dump(inventory))
    try:
        assert applied(bed, None, path)["ok"]
        yield bed, path
    finally:
        for node in bed.nodes:
            bed.exec(node, "rm", "-rf", "--", str(Path(TEST_VENV).parent))


def test_a_deny_above_ours_fails_the_job_and_its_removal_as_printed_passes_it(
        site: tuple[Testbed, Path]) -> None:
    bed, inventory = site
    peer = bed.address("node2")
    bed.exec("node1", "ufw", "insert", "1", "deny", "from", peer, check=True)
    code, lines = verify(bed, None, inventory)
    line = named(lines, "node1", "firewall", f"by hand: ufw rule '[ 1] Anywhere DENY IN {peer}' ")
    assert code == 1 and "repair:" not in line, lines

    run_as_printed(bed, "node1", line)
    code, lines = verify(bed, None, inventory)
    assert code == 0, lines
    assert any(line.startswith("PASS: 3 nodes") for line in lines), lines
