"""Causes no public thread recorded whole for the corpus (tests/data/nccl-logs/README.md), on
lines SYNTHETIC: written for these tests, never read as recorded. Their host prefixes are
invented; the messages after them are as public threads quote them: the memlock WARN is the
title of NVIDIA/nccl-tests#206, the RoCE one that of NVIDIA/nccl-tests#185, the completion
error that of NVIDIA/nccl#1814 (its peer and GIDs shortened), the provider line
aws-ofi-nccl's as NVIDIA/nccl#527 shows it for efa, with tcp."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeprov.fabric import read_logs
from nodeprov.fabric.lines import parse_line
from nodeprov.fabric.ranklog import MAX_WARNINGS, fold


def report_of(tmp_path: Path, text: str) -> tuple[str, dict[str, tuple[str, list[str]]]]:
    log = tmp_path / "synthetic.log"
    log.write_text(text)
    report = read_logs([log])
    return report.verdict, {node.node: (node.network, [c.code for c in node.causes])
                            for node in report.nodes}


SYNTHETIC = {
    "ofi-tcp-provider": (
        "n1:10:11 [0] NCCL INFO NET/OFI Selected Provider is tcp\n"
        "n1:10:11 [0] NCCL INFO Using network AWS Libfabric\n",
        ("Socket", ["ofi-tcp-provider"])),
    "memlock": (
        "n1:10:11 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB ib0:10.0.0.1<0>\n"
        "n1:10:11 [0] NCCL INFO Using network IB\n"
        "n1:10:12 [0] misc/ibvwrap.cc:278 NCCL WARN Call to ibv_reg_mr_iova2 failed with error"
        " Cannot allocate memory\n",
        ("IB", ["memlock"])),
    "roce-gid": (
        "n1:10:11 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n"
        "n1:10:11 [0] NCCL INFO Using network IB\n"
        "n1:10:12 [0] misc/ibvwrap.cc:187 NCCL WARN Call to ibv_modify_qp failed with error "
        "Network is unreachable\n",
        ("RoCE", ["roce-gid"])),
    "hca-selection": (
        "n1:10:11 [0] NCCL INFO NCCL_IB_HCA set to mlx5_1\n"
        "n1:10:11 [0] NCCL INFO NET/IB : Using [0]mlx5_1:1/IB [1]mlx5_10:1/IB [RO]; OOB "
        "ib0:10.0.0.1<0>\n"
        "n1:10:11 [0] NCCL INFO Using network IB\n",
        ("IB", ["hca-selection"])),
    "gdr-level": (
        "n1:10:11 [0] NCCL INFO NCCL_NET_GDR_LEVEL set by environment to LOC\n"
        "n1:10:11 [0] NCCL INFO Using network IB\n"
        "n1:10:11 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0\n",
        ("IB", ["gdr-level"])),
    "fabric-errors": (
        "n1:10:11 [0] NCCL INFO Using network IB\n"
        "n1:10:12 [0] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer "
        "10.0.0.2<50000> with status=12 opcode=1 len=0 vendor err 129 (Send)\n",
        ("IB", ["fabric-errors"])),
}


@pytest.mark.parametrize("code", sorted(SYNTHETIC))
def test_synthetic_cause(tmp_path: Path, code: str) -> None:
    text, node = SYNTHETIC[code]
    assert report_of(tmp_path, text) == ("slower-path", {"n1": node})


@pytest.mark.parametrize("hca", ["=mlx5_1", "mlx5", "mlx5_1:1"])
def test_exact_hca_names_and_stems_are_no_cause(tmp_path: Path, hca: str) -> None:
    """SYNTHETIC: '=' asks for exact names; a stem (mlx5) is meant to match many; a name that
    is the only device's matches no other."""
    text = (f"n1:10:11 [0] NCCL INFO NCCL_IB_HCA set to {hca}\n"
            "n1:10:11 [0] NCCL INFO NET/IB : Using [0]mlx5_1:1/IB [RO]; OOB ib0:10.0.0.1<0>\n"
            "n1:10:11 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA\n")
    assert report_of(tmp_path, text) == ("fast-fabric", {"n1": ("IB", [])})


def test_ib_disable_0_is_no_reason_for_sockets(tmp_path: Path) -> None:
    """SYNTHETIC: NCCL_IB_DISABLE=0 set, an IPoIB bootstrap, no IB device seen: RDMA is there
    and the job does not see it."""
    text = ("n1:10:10 [0] NCCL INFO Bootstrap : Using ib0:10.0.0.1<0>\n"
            "n1:10:11 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 0.\n"
            "n1:10:11 [0] NCCL INFO NET/IB : No device found.\n"
            "n1:10:11 [0] NCCL INFO Using network Socket\n")
    assert report_of(tmp_path, text) == ("slower-path", {"n1": ("Socket", ["rdma-not-visible"])})


def test_a_repeated_warning_is_kept_a_bounded_number_of_times(tmp_path: Path) -> None:
    """SYNTHETIC: a log is untrusted; thousands of WARN lines keep memory bounded."""
    log = tmp_path / "flood.log"
    warn = "n1:10:12 [0] misc/socket.cc:1 NCCL WARN Net : Connection closed by remote peer\n"
    log.write_text("n1:10:11 [0] NCCL INFO Using network Socket\n" + warn * 20_000)
    assert [rank.network for rank in read_logs([log]).nodes[0].ranks] == ["Socket"]
    folded = fold(line for raw in log.read_text().splitlines()
                  if (line := parse_line(raw)) is not None)
    assert len(folded["n1", 10, 0].warnings) == MAX_WARNINGS


def test_a_node_on_sockets_beside_nodes_on_ib(tmp_path: Path) -> None:
    """SYNTHETIC: two nodes of one job, one fell back: it is named, the other is fine."""
    text = ("n1:10:11 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/0/GDRDMA\n"
            "n2:20:21 [0] NCCL INFO NET/IB : No device found.\n"
            "n2:20:21 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.2<0>\n"
            "n2:20:21 [0] NCCL INFO Using network Socket\n")
    assert report_of(tmp_path, text) == ("slower-path", {
        "n1": ("IB", []), "n2": ("Socket", ["no-fast-fabric", "transport-mismatch"])})


@pytest.mark.parametrize(("network", "codes"), [("Socket", ["rdma-not-visible"]), ("EFA", [])])
def test_ofi_finding_no_device_is_a_cause_only_off_efa(tmp_path: Path, network: str,
                                                       codes: list[str]) -> None:
    """SYNTHETIC host; the WARN is aws-ofi-nccl#1020's: the plugin's RDMA protocol found no
    libfabric device. Where the rank still reached EFA (another protocol did), it is none."""
    using = {"Socket": "n1:10:11 [0] NCCL INFO Using network Socket\n",
             "EFA": "n1:10:11 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[0] [send] via "
                    "NET/Libfabric/0/GDRDMA\n"}[network]
    text = ("n1:10:11 [0] nccl_net_ofi_rdma_init:7978 NCCL WARN NET/OFI OFI fi_getinfo() call "
            "failed: No data available\n" + using)
    assert report_of(tmp_path, text)[1] == {"n1": (network, codes)}


@pytest.mark.parametrize(("raw", "host", "rank"), [
    ("[rank12]:gpu-3:4811:4902 [4] NCCL INFO Using network IB", "gpu-3", 12),
    ("[1,26]<stdout>:ip-172-32-36-209:8716:9558 [2] NCCL INFO Ring 00", "ip-172-32-36-209", None),
    ("worker-0: worker-0:19487:21056 [3] NCCL INFO Using network IBext", "worker-0", None),
    ("  | 2024-12-04T05:27:45.084Z | algo-1:18059:18136 [2] NCCL INFO x", "algo-1", None),
])
def test_launcher_prefixes(raw: str, host: str, rank: int | None) -> None:
    line = parse_line(raw)
    assert line is not None and (line.host, line.rank) == (host, rank)


def test_not_an_nccl_line() -> None:
    assert parse_line("NCCL version 2.19.3+cuda12.3") is None
    assert parse_line("Rank 0/2 initializing NCCL...") is None


@pytest.mark.parametrize(("setting", "codes"), [
    ("n1:10:11 [0] NCCL INFO NCCL_NET_GDR_LEVEL set by environment to PHB\n", ["gdr-level"]),
    ("", [])])
def test_gdr_off_by_distance_is_a_cause_where_the_level_is_set(
        tmp_path: Path, setting: str, codes: list[str]) -> None:
    """SYNTHETIC host; the line is NCCL 2.29's form (src/graph/paths.cc). Without the
    variable, NCCL's own default drew the line: the GPU is far from the NIC, which only the
    node's topology (--facts) can name."""
    text = setting + ("n1:10:11 [0] NCCL INFO GPU Direct RDMA Disabled for GPU/0-18000 (rank 0)"
                      " - NET/0-0 (distance 5 > 4)\n")
    assert report_of(tmp_path, text)[1] == {"n1": ("unknown", codes)}


def test_emulated_rdma_beside_a_node_on_its_nic(tmp_path: Path) -> None:
    """SYNTHETIC hosts; the WARN and device list are NVIDIA/nccl#1297's. n1 runs RDMA over
    Soft-RoCE only, n2 over a NIC; n3 lists rxe0 beside a NIC, so a NIC carried its RDMA."""
    soft = ("{h}:10:11 [0] transport/net_ib.cc:115 NCCL WARN Could not find real path of rxe0 "
            "(/sys/class/infiniband/rxe0/device)\n"
            "{h}:10:11 [0] NCCL INFO NET/IB : Using [0]rxe0:1/RoCE{more} [RO]; OOB "
            "eth0:10.0.0.1<0>\n")
    text = (soft.format(h="n1", more="") + soft.format(h="n3", more=" [1]mlx5_0:1/RoCE")
            + "n2:20:21 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/RoCE [RO]; OOB eth0:10.0.0.2<0>\n")
    assert report_of(tmp_path, text) == ("slower-path", {
        "n1": ("RoCE", ["no-fast-fabric", "transport-mismatch"]), "n3": ("RoCE", []),
        "n2": ("RoCE", [])})


def test_nccl_2_27_device_lines_before_its_list(tmp_path: Path) -> None:
    """SYNTHETIC host and values; the form is NCCL 2.27's INFO (src/transport/net_ib.cc at
    v2.27.5-1): one line a device, ``name:uverbsN:port/layer``, then the ``Using`` list."""
    one = ("n1:10:11 [0] NCCL INFO NET/IB: [{n}] mlx5_{n}:uverbs{n}:1/RoCE provider=Mlx5 "
           "speed=400000 context=0x5563d0080110 pciPath=/sys/devices/pci0000:37 ar=0\n")
    text = (one.format(n=0) + one.format(n=2) + "n1:10:11 [0] NCCL INFO NET/IB : Using "
            "[0]mlx5_0:1/RoCE [1]mlx5_2:1/RoCE [RO]; OOB eth0:10.0.0.1<0>\n")
    log = tmp_path / "devices.log"
    log.write_text(text)
    (node,) = read_logs([log]).nodes
    assert (node.network, [(d.name, d.link_layer, d.port) for d in node.devices]) == (
        "RoCE", [("mlx5_0", "RoCE", 1), ("mlx5_2", "RoCE", 1)])
    assert node.evidence is not None and "Using [0]mlx5_0:1/RoCE" in node.evidence


def test_a_pxn_channel_keeps_its_gpudirect(tmp_path: Path) -> None:
    """SYNTHETIC host; the form is NCCL's PXN send channel (src/transport/net.cc, 2.12 to
    2.29): ``NET/IB/0(8)/GDRDMA`` sends through proxy rank 8's NIC, with GPUDirect."""
    text = ("n1:10:11 [1] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [RO]; OOB ib0:10.0.0.1<0>\n"
            "n1:10:11 [1] NCCL INFO Channel 00/0 : 9[1] -> 0[0] [send] via NET/IB/0(8)/GDRDMA\n")
    log = tmp_path / "pxn.log"
    log.write_text(text)
    report = read_logs([log])
    assert [(node.network, node.gdr, node.causes) for node in report.nodes] == [
        ("IB", True, [])] and report.verdict == "fast-fabric"
