"""The fast-fabric facts: each parser on recorded real outputs (tests/data/rdma, sources in
its README), and facts.sh itself run against reconstructed /sys/class/infiniband trees."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest

from nodeprov.remote import rdmatext
from nodeprov.remote.facts import parse_facts, read_script, split_sections
from nodeprov.remote.rdma import read_rdma
from tests.conftest import requires_root_namespaces
from tests.remote.rdma_trees import DATA, build_tree


def recorded(name: str) -> str:
    return (DATA / name).read_text()


def test_nearest_nic_of_each_gpu_from_topo_with_tabs() -> None:
    nearest = rdmatext.parse_topology_nics(recorded("topo-nccl-1453-h100-tabs.txt"))
    assert nearest[0] == ("GPU0", "NIC8", "PIX") and nearest[7] == ("GPU7", "NIC1", "PIX")
    assert len(nearest) == 8  # the NIC rows below are no GPU's


def test_nearest_nic_from_topo_with_spaces_and_legend_names() -> None:
    text = recorded("topo-nccl-933-nv8-spaces.txt")
    assert rdmatext.parse_topology_nics(text)[:2] == (("GPU0", "NIC2", "PIX"),
                                                      ("GPU1", "NIC4", "PIX"))
    # newer nvidia-smi names the NICs in a legend under the table
    named = rdmatext.parse_topology_nics(text + "\nNIC Legend:\n\n  NIC2: mlx5_2\n")
    assert named[0] == ("GPU0", "mlx5_2", "PIX")


def test_a_gpu_whose_nearest_nic_is_across_the_cpus_is_sys() -> None:
    table = "\tGPU0\tNIC0\nGPU0\t X \tSYS\nNIC0\tSYS\t X \n"
    assert rdmatext.parse_topology_nics(table) == (("GPU0", "NIC0", "SYS"),)


def test_acs_lines_belong_to_the_slot_above_them() -> None:
    acs, denied = rdmatext.parse_acs(recorded("lspci-acs-openvmm-3461.txt"))
    assert acs == {"0000:00:00.0": "SrcValid- TransBlk- ReqRedir- CmpltRedir- UpstreamFwd- "
                                   "EgressCtrl- DirectTrans-"} and not denied
    # an ACSCtl before any slot line (the excerpt starts inside a device) is no one's
    assert rdmatext.parse_acs(recorded("lspci-acs-systeminformation-819.txt")) == ({}, set())
    assert rdmatext.parse_acs(recorded("lspci-acs-rockchip-pcie-6-plx.txt")) == ({}, set())


def test_active_mtu_per_port_from_ibv_devinfo() -> None:
    assert rdmatext.parse_active_mtus(recorded("ibv-devinfo-deepep-38-ib-port-down.txt")) == {
        ("mlx5_0", 1): 4096}
    assert rdmatext.parse_active_mtus(recorded("ibv-devinfo-rxe-dev-46-softroce.txt")) == {
        ("rxe0", 1): 1024}


def test_nccl_settings_in_nccls_order() -> None:
    # NCCL skips '#' lines and lines without '='; the environment wins, then the user's file
    settings = rdmatext.parse_nccl_settings(
        "NCCL_IB_DISABLE=0\nPATH=/usr/bin\nNCCL_DEBUG=INFO",
        "# /home/a/.nccl.conf\n#NCCL_IB_HCA=mlx5_9\nNCCL_IB_DISABLE=1\nNCCL_IB_HCA==mlx5_0\n"
        "no equals sign\nNCCL_IB_HCA=mlx5_1",
        "NCCL_IB_HCA=mlx5\nNCCL_SOCKET_IFNAME=eth0\nNCCL_BAD=\u202eevil")
    assert settings == (("NCCL_IB_DISABLE", "0", "environment"),
                        ("NCCL_DEBUG", "INFO", "environment"),
                        ("NCCL_IB_HCA", "=mlx5_0", "/home/a/.nccl.conf"),
                        ("NCCL_SOCKET_IFNAME", "eth0", "/etc/nccl.conf"))


@pytest.mark.parametrize("said", ["64 KiB", "-1", "1" * 30, "unlimited; rm -rf /"])
def test_a_memlock_limit_out_of_pattern_is_refused(said: str) -> None:
    with pytest.raises(ValueError, match="locked-memory limit"):
        rdmatext.parse_memlock(said)


def test_lines_out_of_pattern_are_left_out() -> None:
    text = ("mlx5_0 1 state 4: ACTIVE\nmlx5_0 1 state 4: ACTIVE; reboot\n"
            "mlx5_0;x 1 rate 400 Gb/sec\nmlx5_0 1 gid 3 fe80::1 RoCE v2|eth0\n"
            "mlx5_0 1 gid 4 0000:0000:0000:0000:0000:ffff:0a98:000c RoCE v9|eth0\n")
    assert rdmatext.parse_port_lines(text) == {("mlx5_0", 1): {"state": "4: ACTIVE"}}
    assert rdmatext.parse_gid_lines(text) == {}
    assert rdmatext.parse_char_devices("/dev/infiniband/../../etc rw\n/dev/infiniband absent"
                                       ) == (("/dev/infiniband", "absent"),)


def test_what_the_login_may_open_under_dev_infiniband() -> None:
    said = ("/dev/infiniband/uverbs0 rw\n/dev/infiniband/rdma_cm denied\n"
            "/dev/infiniband/* absent\n/dev/infiniband empty\n/dev/infiniband rw\n")
    assert rdmatext.parse_char_devices(said) == (
        ("/dev/infiniband/uverbs0", "rw"), ("/dev/infiniband/rdma_cm", "denied"),
        ("/dev/infiniband", "empty"))


def test_a_node_without_rdma_says_so() -> None:
    rdma = read_rdma({"rdma_memlock": "64\n", "mtus": "eth0 1500\n"})
    assert not rdma.present and rdma.summary() == {"fast interconnect": "no fast interconnect"}
    assert rdma.as_json()["ports"] == [] and rdma.as_json()["mtus"] == {"eth0": 1500}


def run_facts_on(tree: Path, tmp_path: Path) -> dict[str, str]:
    """facts.sh as a node runs it, with ``tree`` as its /sys/class/infiniband: in a private
    mount namespace of this machine (a tmpfs over /sys/class holds the mount point)."""
    script = tmp_path / "facts.sh"
    script.write_text(read_script([]))
    mounts = (f"mount -t tmpfs none /sys/class && mkdir /sys/class/infiniband && "
              f"mount --bind {shlex.quote(str(tree))} /sys/class/infiniband && "
              f"exec sh {shlex.quote(str(script))} TOKEN")
    result = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                             mounts], capture_output=True, text=True, timeout=60, check=True)
    return split_sections(result.stdout, "TOKEN")


needs_root = pytest.mark.skipif(requires_root_namespaces() is not None,
                                reason=f"needs root namespaces: {requires_root_namespaces()}")


@needs_root
def test_facts_sh_reads_a_reconstructed_roce_pod(tmp_path: Path) -> None:
    tree = build_tree(tmp_path / "ib", gids=DATA / "show-gids-nccl-1573-pod-macvlan.txt",
                      state={"state": "4: ACTIVE", "phys_state": "5: LinkUp",
                             "link_layer": "Ethernet"})
    facts = parse_facts(run_facts_on(tree, tmp_path))
    ports = facts.rdma.ports
    assert [(port.device, port.port, port.kind, port.active) for port in ports] == [
        ("mlx5_0", 1, "RoCE", True), ("mlx5_1", 1, "RoCE", True)]
    assert [(gid.index, gid.type, gid.netdev) for gid in ports[0].gids] == [
        (4, "IB/RoCE v1", "net1"), (5, "RoCE v2", "net1"), (6, "IB/RoCE v1", "net1"),
        (7, "RoCE v2", "net1")]  # 0-3 are all-zero entries: left out
    assert ports[1].gids[3].gid == "0000:0000:0000:0000:0000:ffff:0a98:040c"
    summary = facts.summary()
    assert summary["fast interconnect"] == ("mlx5_0/1 RoCE ACTIVE LinkUp; "
                                            "mlx5_1/1 RoCE ACTIVE LinkUp")
    # this machine has no /dev/infiniband: what a container without the device list shows
    assert summary["rdma access"] == "/dev/infiniband absent"
    assert summary["memlock"] == run_ulimit()


@needs_root
def test_facts_sh_reads_a_reconstructed_ib_node_and_a_disabled_port(tmp_path: Path) -> None:
    tree = build_tree(tmp_path / "ib", ibstat=DATA / "ibstat-mooncake-1999-roce.txt")
    rdma = parse_facts(run_facts_on(tree, tmp_path)).rdma
    assert [(port.device, port.state, port.phys_state, port.rate, port.link_layer)
            for port in rdma.ports] == [
        ("mlx5_0", "4: ACTIVE", "5: LinkUp", "200 Gb/sec", "Ethernet"),
        ("mlx5_1", "4: ACTIVE", "5: LinkUp", "200 Gb/sec", "Ethernet"),
        ("mlx5_10", "1: DOWN", "3: Disabled", "", "")]


def run_ulimit() -> str:
    said = subprocess.run(["sh", "-c", "ulimit -l"], capture_output=True, text=True,
                          check=True).stdout.strip()
    return "unlimited" if said == "unlimited" else f"{said} KiB"
