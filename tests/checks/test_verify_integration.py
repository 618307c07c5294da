"""`nodeprov verify` on a real local cluster: clean after apply, then what OS updates do to one
node, one scenario at a time: verify names the node and the item in one line, changes nothing,
apply repairs it, and verify passes again."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from nodeprov.testbed.cluster import Testbed
from tests.checks.drift.printed import PLAYBOOK, applied, run_printed
from tests.checks.drift.printed import verify as verify_lines
from tests.conftest import MakeTestbed

pytestmark = pytest.mark.integration

# Debian's /etc/environment as a base-files upgrade would leave it.
STOCK_ENVIRONMENT = 'PATH="/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"\n'

# The wreck on node2, and the start of the drift line of the task's plan.
SCENARIOS = {
    "firewall": (("sh", "-c", "ufw --force reset && ufw --force disable"),
                 "node2 firewall: plan: add ufw rule(s): allow from any to any port 22 "),
    "hosts": (("sed", "-i", "/^# BEGIN nodeprov hosts/,/^# END nodeprov hosts/d", "/etc/hosts"),
              "node2 hosts: plan: /etc/hosts: list 3 nodes"),
    "ipv6": (("sysctl", "-w", "net.ipv6.conf.all.disable_ipv6=0"),
             "node2 ipv6: plan: disable IPv6 now: net.ipv6.conf.all.disable_ipv6=1"),
    "nccl_env": (("sh", "-c", f"printf '%s' '{STOCK_ENVIRONMENT}' > /etc/environment"),
                 "node2 nccl_env: plan: /etc/environment: set NCCL_SOCKET_IFNAME, "
                 "GLOO_SOCKET_IFNAME"),
}
# What a new SSH session sees after the nccl_env wreck: a check beyond the plan says it too.
NEW_SESSION = ("node2 nccl_env: a new SSH session has NCCL_SOCKET_IFNAME unset, "
               "GLOO_SOCKET_IFNAME unset (expected NCCL_SOCKET_IFNAME==eth0")


def verify(bed: Testbed, playbook: Path, *options: str) -> tuple[int, list[str]]:
    """verify's exit code and its lines between what ran and the one verdict."""
    code, (header, *lines, verdict) = verify_lines(bed, playbook, *options)
    assert header.startswith("nodeprov verify on ")
    assert verdict.startswith("PASS: " if code == 0 else "FAIL: "), verdict
    return code, lines


def apply(bed: Testbed, playbook: Path, *options: str) -> dict[str, list[str]]:
    """Run apply; {host: names of the tasks it changed (or would, with --check)}."""
    return {name: [task["name"] for task in host["tasks"] if task["status"] == "changed"]
            for name, host in applied(bed, playbook, *options)["hosts"].items()}


@pytest.fixture()
def cluster(make_testbed: MakeTestbed, tmp_path: Path) -> tuple[Testbed, Path]:
    """Three fresh nodes, provisioned by the playbook, and the playbook's path."""
    bed = make_testbed(nodes=3, outsider=False)
    playbook = tmp_path / "network.yaml"
    playbook.write_text(PLAYBOOK)
    assert apply(bed, playbook)["node1"] == ["IPv6", "Firewall", "Cluster names",
                                             "NCCL environment"]
    return bed, playbook


@pytest.mark.parametrize("item", SCENARIOS)
def test_drift_is_named_and_repaired(cluster: tuple[Testbed, Path], item: str) -> None:
    bed, playbook = cluster
    code, lines = verify(bed, playbook)
    assert code == 0, lines
    assert lines[-1].startswith("verify: 3 nodes, ") and " 0 drifted, 0 could not run" in lines[-1]

    wreck, expected = SCENARIOS[item]
    assert bed.exec("node2", *wreck).returncode == 0
    code, lines = verify(bed, playbook)
    assert code == 1
    drift = [line for line in lines if line.startswith(expected)]
    assert drift, lines
    assert drift[0].endswith(f"; repair: nodeprov apply {bed.inventory_path} --playbook "
                             f"{playbook} --limit node2 --tags {item}")
    assert all(line.startswith(f"node2 {item}: ") for line in lines[:-1]), lines
    if item == "nccl_env":
        assert any(line.startswith(NEW_SESSION) for line in lines), lines

    # verify changed nothing: the drift is still there, and apply's check mode sees it too
    again = verify(bed, playbook)
    assert (again[0], again[1][:-1]) == (1, lines[:-1])
    task = {"firewall": "Firewall", "hosts": "Cluster names", "ipv6": "IPv6",
            "nccl_env": "NCCL environment"}[item]
    assert apply(bed, playbook, "--check") == {"node1": [], "node2": [task], "node3": []}

    # the repair as printed, then nothing left to change
    assert run_printed(bed, drift[0]) == [f"node2: {drift[0].partition('; repair: ')[2]}"]
    assert apply(bed, playbook, "--check") == {"node1": [], "node2": [], "node3": []}
    assert verify(bed, playbook)[0] == 0


def test_verify_takes_the_extra_vars_apply_was_given(cluster: tuple[Testbed, Path]) -> None:
    bed, playbook = cluster
    assert apply(bed, playbook, "-e", "rdzv_port=29611", "--tags", "firewall") == {
        "node1": ["Firewall"], "node2": ["Firewall"], "node3": ["Firewall"]}
    assert verify(bed, playbook, "-e", "rdzv_port=29611", "--no-job")[0] == 0
    # without them the inventory's port is wanted again: drift, and a repair without -e
    code, lines = verify(bed, playbook)
    assert code == 1
    assert any(line.startswith("node2 firewall: plan: ") and line.endswith(
        f"--playbook {playbook} --limit node2 --tags firewall") for line in lines), lines


def test_checks_run_directly_with_pytest(cluster: tuple[Testbed, Path], tmp_path: Path) -> None:
    bed, playbook = cluster
    command = [sys.executable, "-m", "pytest", "-p", "nodeprov.checks", "--pyargs",
               "nodeprov.checks", "--inventory", str(bed.inventory_path), "--playbook",
               str(playbook), "-p", "no:cacheprovider", "-q"]

    def run_checks() -> subprocess.CompletedProcess[str]:
        return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True,
                              timeout=300, check=False)

    clean = run_checks()
    assert clean.returncode == 0, clean.stdout
    # 3 nodes: firewall 1, hosts 1, nccl_env 5 checks each; torch's, memlock's and
    # nccl_fabric's skip (no such task)
    assert "21 passed, 9 skipped in " in clean.stdout.splitlines()[-1]

    wreck = SCENARIOS["nccl_env"][0]
    assert bed.exec("node3", *wreck).returncode == 0
    drifted = run_checks()
    assert drifted.returncode == 1
    assert NEW_SESSION.replace("node2", "node3") in drifted.stdout
    assert "nodeprov/checks/test_nccl_env.py::test_new_session_has_variables[node3]" in (
        drifted.stdout)


VENV_ONLY = """\
- name: Python and torch
  hosts: all
  tasks:
    - name: Python venv
      venv: {path: "{{ venv_path }}", python_version: "{{ python_version }}"}
      tags: [venv]
"""
VENV_PLAYBOOK = VENV_ONLY + """\
    - name: torch
      torch: {venv: "{{ venv_path }}", version: "{{ torch_version }}", cuda: "{{ torch_cuda }}",
              numpy: false}
      tags: [venv]
"""
# No torch wheel reaches the offline nodes in minutes, so a stand-in: the version.py and
# dist-info the torch task reads, and the API its import check calls (no numpy beside it).
STAND_IN_TORCH = r"""set -e
sp=$(echo "$1"/lib/python3*/site-packages); version=$2
rm -rf "$sp"/torch "$sp"/torch-*.dist-info
mkdir -p "$sp/torch/distributed" "$sp/torch-${version%%+*}.dist-info"
printf "__version__ = '%s'\ncuda = None\n" "$version" > "$sp/torch/version.py"
printf 'from torch import distributed, version\nfrom torch.version import __version__\n' \
  > "$sp/torch/__init__.py"
printf 'def is_gloo_available():\n    return True\n' > "$sp/torch/distributed/__init__.py"
printf 'Metadata-Version: 2.1\nName: torch\nVersion: %s\n\n' "$version" \
  > "$sp/torch-${version%%+*}.dist-info/METADATA"
"""


def test_venv_and_torch_build_checked_on_every_node(make_testbed: MakeTestbed,
                                                     tmp_path: Path) -> None:
    bed = make_testbed(nodes=3, outsider=False)
    venv_only = tmp_path / "venv-only.yaml"
    venv_only.write_text(VENV_ONLY)
    assert apply(bed, venv_only)["node2"] == ["Python venv"]  # torch cannot install offline
    playbook = tmp_path / "venv.yaml"
    playbook.write_text(VENV_PLAYBOOK)
    code, lines = verify(bed, playbook)
    assert code == 1
    assert any(line.startswith("node2 torch: plan: ") and line.endswith(
        "--limit node2 --tags venv") for line in lines), lines
    assert not any(line.startswith(("node1 venv", "node2 venv", "node3 venv"))
                   for line in lines), lines

    def stand_in(node: str, version: str) -> None:
        bed.exec(node, "sh", "-c", STAND_IN_TORCH, "-", "/opt/nodeprov/venv", version,
                 check=True)

    for node in bed.nodes:
        stand_in(node, "2.13.0+cpu")
    assert apply(bed, playbook, "--check") == {"node1": [], "node2": [], "node3": []}
    code, lines = verify(bed, playbook)
    assert code == 0, lines
    # 6 plans (venv and torch on 3 nodes) and 3 torch imports; the network checks skip
    assert " 9 passed, 0 drifted" in lines[-1]

    stand_in("node2", "2.12.0+cpu")
    code, lines = verify(bed, playbook)
    assert code == 1
    repair = f"repair: nodeprov apply {bed.inventory_path} --playbook {playbook} --limit node2 "
    assert lines[0].startswith("node2 torch: plan: ") and lines[0].endswith(repair + "--tags venv")
    assert lines[1:-1] == [
        "node2 torch: importing torch: imports torch 2.12.0+cpu (CUDA None), expected "
        f"2.13.0+cpu (expected torch 2.13.0+cpu importing cleanly); {repair}--tags venv"]
