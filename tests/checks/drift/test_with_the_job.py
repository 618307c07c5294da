"""The drift corpus with the verification job: on the default playbook (torch from this
machine's mirrors), one drift of each network item is named by verify with the job, repaired
as printed, and then verify with the job (matrix, torchrun, all-reduce) exits 0 and the effect
holds on the node. The other corpus files run verify without the job (their playbooks have no
venv), so every test here costs a job run and there is one per item, not per case.

The firewall's is #32's known bug: a user's deny of a peer above ours made the matrix fail
while the repair it printed, apply --tags firewall, changed nothing."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from nodeprov.testbed.cluster import Testbed
from tests.checks.drift.printed import applied, kernel, named, run_printed, verify
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
        assert applied(bed, None, inventory=path)["ok"]
        yield bed, path
    finally:
        for node in bed.nodes:
            bed.exec(node, "rm", "-rf", "--", str(Path(TEST_VENV).parent))


def test_a_deny_above_ours_fails_the_job_and_its_removal_as_printed_passes_it(
        site: tuple[Testbed, Path]) -> None:
    bed, inventory = site
    peer = bed.address("node2")
    bed.exec("node1", "ufw", "insert", "1", "deny", "from", peer, check=True)
    code, lines = verify(bed, None, inventory=inventory)
    line = named(lines, "node1", "firewall", f"by hand: ufw rule '[ 1] Anywhere DENY IN {peer}' ")
    assert code == 1 and "repair:" not in line, lines

    run_printed(bed, line)
    passes_with_the_job(bed, inventory)


def passes_with_the_job(bed: Testbed, inventory: Path) -> None:
    """verify exits 0 and its verdict has the job's pass on every node."""
    code, lines = verify(bed, None, inventory=inventory)
    assert code == 0 and lines[-1].startswith("PASS: ") and "; job: " in lines[-1], lines
    assert "3 nodes, 3 ranks (gloo)" in lines[-1], lines


def resolved(bed: Testbed, node: str, name: str) -> list[str]:
    """What glibc answers for ``name`` on ``node``, as a job's rendezvous asks it."""
    return bed.exec(node, "getent", "hosts", name, check=True).stdout.split()[:1]


def test_the_issues_stale_hosts_line_is_commented_out_and_the_job_passes(
        site: tuple[Testbed, Path]) -> None:
    bed, inventory = site
    bed.exec("node2", "sh", "-c", "echo '10.1.2.77 node1' >> /etc/hosts", check=True)
    code, lines = verify(bed, None, inventory=inventory)
    line = named(lines, "node2", "hosts", "plan: ")
    assert code == 1 and line.endswith("--limit node2 --tags hosts"), lines

    run_printed(bed, line)
    passes_with_the_job(bed, inventory)
    assert resolved(bed, "node2", "node1") == [bed.address("node1")]


def test_the_nccl_block_removed_is_written_again_and_the_job_passes(
        site: tuple[Testbed, Path]) -> None:
    bed, inventory = site
    bed.exec("node3", "sed", "-i", "/^# BEGIN nodeprov/,/^# END nodeprov/d", "/etc/environment",
             check=True)
    code, lines = verify(bed, None, inventory=inventory)
    line = named(lines, "node3", "nccl_env", "plan: ")
    assert code == 1 and line.endswith("--limit node3 --tags nccl_env"), lines

    run_printed(bed, line)
    passes_with_the_job(bed, inventory)
    # a new SSH session, as torchrun's launcher opens one: pam_env reads /etc/environment
    login = bed.ssh("node3", "sh", "-c", "echo $NCCL_SOCKET_IFNAME $GLOO_SOCKET_IFNAME",
                    check=True)
    assert login.stdout.split() == ["=eth0", "eth0"], login.stdout


def test_ipv6_back_on_by_a_later_file_is_repaired_as_printed_and_the_job_passes(
        site: tuple[Testbed, Path]) -> None:
    bed, inventory = site
    later = "/etc/sysctl.d/99-zzz-cloud-ipv6.conf"
    bed.exec("node1", "sh", "-c", f"echo 'net.ipv6.conf.all.disable_ipv6 = 0' > {later} && "
             "sysctl -qw net.ipv6.conf.all.disable_ipv6=0", check=True)
    code, lines = verify(bed, None, inventory=inventory)
    line = named(lines, "node1", "ipv6", "plan: disable IPv6 now: ")
    assert code == 1 and f"by hand: {later}:1 " in line, lines

    run_printed(bed, line)
    passes_with_the_job(bed, inventory)
    bed.exec("node1", "sh", "-c", "sysctl --system >/dev/null 2>&1; true", check=True)
    assert kernel(bed, "node1", "net.ipv6.conf.all.disable_ipv6") == "1"
    bed.exec("node1", "rm", "-f", later, check=True)
