"""``nodeprov fabric --facts``: the causes the nodes' facts show and a log cannot prove.

The logs are recorded (tests/data/nccl-logs); the facts are ``read_rdma`` of sections in
facts.sh's line format, built from the recorded outputs of tests/data/rdma where one shows the
case (named at each), else written for the test as the kernel's sysfs words (named so).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from nodeprov.cli import app
from nodeprov.commands.facts import facts_report
from nodeprov.fabric import read_logs
from nodeprov.fabric.factcauses import mtu_mismatch, node_causes, with_facts
from nodeprov.remote.facts import parse_facts, split_sections
from nodeprov.remote.rdma import read_rdma

LOGS = Path(__file__).parents[1] / "data" / "nccl-logs"
RDMA = Path(__file__).parents[1] / "data" / "rdma"
VM = Path(__file__).parents[1] / "data" / "facts" / "debian12-vm.txt"
# written for the test in facts.sh's format: a RoCE port as sysfs words it, and its GIDs as
# show_gids printed them in NVIDIA/nccl#1573 (RoCE v2 at 5 and 7)
ROCE_PORT = """\
mlx5_0 1 state 4: ACTIVE
mlx5_0 1 phys_state 5: LinkUp
mlx5_0 1 link_layer Ethernet
mlx5_0 1 rate 200 Gb/sec (4X HDR)
mlx5_0 1 gid 5 fe80:0000:0000:0000:a4ed:ccff:fe8b:1994 RoCE v2|net1
mlx5_0 1 gid 7 0000:0000:0000:0000:0000:ffff:0a98:000c RoCE v2|net1
"""
HEALTHY = {"rdma_ports": ROCE_PORT, "rdma_char_devices": "/dev/infiniband/uverbs0 rw\n",
           "rdma_libraries": "/lib/x86_64-linux-gnu/libibverbs.so.1\n",
           "rdma_memlock": "unlimited\n", "rdma_modules": "loaded nvidia_peermem\n",
           "rdma_acs": (RDMA / "lspci-acs-openvmm-3461.txt").read_text()}
# systeminformation#819's ACSCtl line (ACS on), under a bridge slot written for the test
ACS_ON = ("0000:17:01.0 PCI bridge: written for the test\n"
          + (RDMA / "lspci-acs-systeminformation-819.txt").read_text().splitlines()[2] + "\n")


def fabric(**sections: str) -> dict[str, Any]:
    return read_rdma({**HEALTHY, **sections}).as_json()


def codes(found: list[Any]) -> list[str]:
    return [cause.code for cause in found]


def test_a_healthy_node_shows_no_cause() -> None:
    assert node_causes(fabric(), gdr=None) == []


def test_each_fact_names_its_cause() -> None:
    broken = fabric(rdma_char_devices="/dev/infiniband absent\n", rdma_libraries="",
                    rdma_memlock="64\n", rdma_modules="installed nvidia_peermem /lib/m.ko\n",
                    rdma_acs=ACS_ON, rdma_devices="mlx5_0 - /sys/devices/pci0000:17/"
                    "0000:17:01.0/0000:18:00.0\n",
                    rdma_topology="\tGPU0\tNIC0\nGPU0\t X \tSYS\n")  # written for the test
    found = node_causes(broken, gdr=None)
    assert codes(found) == ["rdma-not-visible", "verbs-missing", "memlock", "no-gdr-module",
                            "acs", "numa-placement"]
    evidence = {cause.code: cause.evidence for cause in found}
    assert evidence["memlock"] == "ulimit -l in the job's login: 64 KiB, not unlimited"
    assert evidence["no-gdr-module"].endswith("installed: nvidia_peermem")
    assert evidence["acs"].startswith("bridge 0000:17:01.0 above a NIC or GPU: ACSCtl: SrcValid+")
    assert evidence["numa-placement"] == ("GPU0's nearest NIC NIC0 is SYS (across the CPUs' "
                                          "interconnect)")


def test_a_port_up_without_a_subnet_manager_is_down() -> None:
    ports = ROCE_PORT.replace("4: ACTIVE", "2: INIT")
    assert [cause.evidence for cause in node_causes(fabric(rdma_ports=ports), None)] == [
        "mlx5_0 port 1: state 2: INIT, phys_state 5: LinkUp (link up, no subnet manager?)"]


def test_a_gid_index_that_is_no_roce_v2_entry() -> None:
    settings = fabric(nccl_environment="NCCL_IB_GID_INDEX=3")
    assert [cause.evidence for cause in node_causes(settings, None)] == [
        "NCCL_IB_GID_INDEX=3 (environment): mlx5_0 port 1 has RoCE v2 GIDs at 5, 7"]
    assert node_causes(fabric(nccl_system_conf="NCCL_IB_GID_INDEX=7"), None) == []


def test_the_odd_mtu_out() -> None:
    with_mtu = {name: fabric(rdma_devinfo=f"hca_id: mlx5_0\n\tport:   1\n\t\tactive_mtu: {mtu}"
                                          " (5)\n")
                for name, mtu in (("a", 4096), ("b", 4096), ("c", 1024))}
    found = mtu_mismatch(with_mtu)
    assert list(found) == ["c"] and found["c"].evidence == (
        "active_mtu 1024 on c; the other nodes' ports: 4096")


def test_a_socket_log_with_facts_names_why() -> None:
    report = read_logs([LOGS / "nccl-1267-no-ib-device-2.19.3.log"])
    assert codes(report.nodes[0].causes) == ["no-fast-fabric"]
    hosts = {"gpu4": {"facts": {"hostname": "instance-8g-96c-4", "gpu": "8x H100"},
                      "fabric": fabric(rdma_char_devices="/dev/infiniband absent\n")}}
    report = with_facts(report, hosts)
    assert codes(report.nodes[0].causes) == ["rdma-not-visible"]
    assert report.verdict == "slower-path"


def test_a_fast_path_keeps_only_what_slows_it_still() -> None:
    report = read_logs([LOGS / "nccl-707-ib-gdrdma.log"])
    node = report.nodes[0].node
    hosts = {node: {"facts": {"hostname": node, "gpu": "4x"},
                    "fabric": fabric(rdma_memlock="64\n", rdma_acs=ACS_ON,
                                     rdma_devices="mlx5_0 - /sys/devices/pci0000:17/"
                                                  "0000:17:01.0/0000:18:00.0\n")}}
    assert codes(with_facts(report, hosts).nodes[0].causes) == ["acs"]


def test_a_node_the_facts_do_not_name_says_so() -> None:
    report = with_facts(read_logs([LOGS / "nccl-1537-roce-gdr-disabled.log"]), {})
    assert report.nodes[0].unknown[-1].startswith("the node's facts: no host of the facts "
                                                  "report is hostname1")


def test_fabric_facts_reads_a_facts_report(tmp_path: Path) -> None:
    sections = {**split_sections(VM.read_text(), "TOKEN123"), **HEALTHY,
                "rdma_memlock": "64\n", "rdma_modules": "installed nvidia_peermem /m.ko\n"}
    sections["hostname"] = "hostname1"
    report = facts_report(["hostname1"], {"hostname1": parse_facts(sections)}, {})
    path = tmp_path / "facts.json"
    path.write_text(json.dumps(report))
    result = CliRunner().invoke(app, ["fabric", str(LOGS / "nccl-1537-roce-gdr-disabled.log"),
                                      "--facts", str(path)])
    assert result.exit_code == 3, result.output
    # the log proves no-gdr-module itself: its line is kept, the facts add what it cannot
    assert "no-gdr-module: " + str(LOGS / "nccl-1537-roce-gdr-disabled.log:5: hostname1") in (
        result.stdout)
    assert "  memlock: ulimit -l in the job's login: 64 KiB, not unlimited" in result.stdout
    assert "need the nodes' facts" not in result.stdout


def test_fabric_facts_refuses_another_commands_report(tmp_path: Path) -> None:
    report = facts_report([], {}, {})
    report["command"] = "fabric"
    report.update(verdict="unknown", nodes=[])
    del report["hosts"]
    path = tmp_path / "fabric.json"
    path.write_text(json.dumps(report))
    result = CliRunner().invoke(app, ["fabric", str(LOGS / "nccl-707-ib-gdrdma.log"),
                                      "--facts", str(path)])
    assert result.exit_code == 2 and "--facts takes the file `nodeprov facts --json`" in (
        result.stderr)


def test_acs_above_a_gpu_counts_and_without_root_it_is_not_read() -> None:
    above_gpu = fabric(rdma_acs=ACS_ON, rdma_devices="mlx5_0 - /sys/devices/pci0000:5d/"
                       "0000:5d:02.0/0000:5e:00.0\n",
                       rdma_gpu_paths="/sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0\n")
    assert codes(node_causes(above_gpu, gdr=None)) == ["acs"]
    # lspci run by a user prints this in place of every capability (pciutils' lspci -vvv)
    hidden = fabric(rdma_acs="0000:17:01.0 PCI bridge: written for the test\n"
                             "\tCapabilities: <access denied>\n",
                    rdma_gpu_paths="/sys/devices/pci0000:17/0000:17:01.0/0000:18:00.0\n")
    assert hidden["acs_unread"] == "not read: lspci shows PCI capabilities to root only"
    assert node_causes(hidden, gdr=None) == []
