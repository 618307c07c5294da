"""The log reader on every recorded NCCL log (tests/data/nccl-logs, sources in its README):
per node the network, GPUDirect, the intra-node path and the cause codes; per log the
verdict. Expectations were read off each log by hand before they were written here."""

from __future__ import annotations

from pathlib import Path

import pytest

from nodeprov.fabric import read_logs

DATA = Path(__file__).parents[1] / "data" / "nccl-logs"
Node = tuple[str, bool | None, list[str], list[str]]  # network, gdr, intra, cause codes

CASES: dict[str, tuple[str, dict[str, Node]]] = {
    "nccl-707-ib-gdrdma": ("fast-fabric", {"10-90-43-152": ("IB", True, [], [])}),
    "nccl-tests-185-roce-2.19.3": ("fast-fabric", {
        "dgxh100-4": ("RoCE", None, [], []), "dgxh100-3": ("RoCE", None, [], [])}),
    "nccl-1537-roce-gdr-disabled": ("slower-path", {
        "hostname1": ("RoCE", False, [], ["no-gdr-module"])}),
    "nccl-1053-socket-ib-disabled-lo": ("slower-path", {
        "axa": ("Socket", False, [], ["ib-disabled", "bootstrap-interface"])}),
    "nccl-1267-no-ib-device-2.19.3": ("no-fast-fabric-seen", {
        "instance-8g-96c-4": ("Socket", False, [], ["no-fast-fabric"])}),
    "nccl-676-socket-2.11.4": ("no-fast-fabric-seen", {
        "gpu01": ("Socket", False, [], ["no-fast-fabric"]),
        "gpu02": ("unknown", None, [], [])}),
    "nccl-527-efa-libfabric-2.9.9": ("fast-fabric", {
        "ip-10-216-178-255": ("unknown", None, [], []),
        "ip-10-216-179-87": ("EFA", None, [], [])}),
    "torchtitan-1570-torchrun-libfabric": ("fast-fabric", {
        "costa-671b-5-worker-1": ("EFA", True, ["P2P"], [])}),
    "nccl-1597-efa-libfabric-p5en": ("fast-fabric", {
        "8h200-2": ("unknown", None, [], []), "8h200-3": ("EFA", None, [], [])}),
    "nccl-1410-verbs-missing-socket": ("slower-path", {
        "h100-kickoff-llama-70b-chat-20230328-bcf75c4f6-gn6nd": (
            "Socket", False, [], ["verbs-missing"])}),
    "nccl-2047-verbs-missing-2.29.2": ("slower-path", {
        "VM-16-2-ubuntu": ("Socket", False, [], ["verbs-missing"])}),
    "vlmevalkit-975-ib-disabled-container": ("slower-path", {
        "12f0e56ac84d": ("Socket", False, [], ["ib-disabled"])}),
    "nccl-1538-roce-ibext-2.22.3": ("fast-fabric", {
        "job-3bb823c0-6d27-4312-8094-1c5910bf9b51-worker-0": ("RoCE", None, [], [])}),
    "nccl-1538-p2p-cumem-2.22.3": ("unknown", {
        "job-3bb823c0-6d27-4312-8094-1c5910bf9b51-worker-0": ("unknown", None, ["P2P"], [])}),
    "nccl-tests-166-socket-shm": ("no-fast-fabric-seen", {
        "ubuntu": ("Socket", False, ["SHM"], ["no-fast-fabric"])}),
    "nccl-952-bootstrap-ipoib": ("unknown", {"<cluster_name>": ("unknown", None, [], [])}),
    "nccl-952-socket-p2p-ipc": ("no-fast-fabric-seen", {
        "<cluster_name>": ("Socket", False, ["P2P"], ["no-fast-fabric"])}),
    "nccl-1925-assigned-net-plugin-ib": ("fast-fabric", {
        "nccl-sleep-c7d759db6-2bp29": ("IB", None, [], []),
        "nccl-sleep-c7d759db6-cgz82": ("IB", None, [], [])}),
    "nccl-tests-213-nvls": ("unknown", {"hw14": ("unknown", None, ["NVLS", "P2P"], [])}),
    "aws-ofi-nccl-715-cloudwatch-libfabric": ("fast-fabric", {
        "algo-1": ("EFA", True, ["P2P"], [])}),
    "nccl-1189-ib-gdrdma-p2p-cumem": ("fast-fabric", {
        "H20-GPU-06": ("IB", True, ["P2P"], []), "H20-GPU-05": ("unknown", None, ["P2P"], [])}),
    "deepspeed-4715-ibext-no-gdr": ("slower-path", {
        "ravg1038": ("IB", False, ["P2P"], ["no-gdr-module"]),
        "ravg1040": ("IB", False, ["P2P"], ["no-gdr-module"])}),
    "nccl-tests-29-bootstrap-socket-then-ib": ("slower-path", {
        "server3": ("IB", None, [], ["bootstrap-interface"]),
        "server1": ("IB", None, [], [])}),
    "nccl-1357-ib-sharp-ibext": ("fast-fabric", {
        "qh100-gpu19": ("IB", None, [], []), "qh100-gpu20": ("unknown", None, [], [])}),
    "nccl-302-mpi-prefix-ib-roce-2.5.6": ("slower-path", {
        "crow-ib-new-nccl-256-info-19": ("mixed", None, ["P2P"], ["transport-mismatch"])}),
    "aws-ofi-nccl-24-mpirun-prefix-libfabric": ("slower-path", {
        "ip-172-32-36-209": ("unknown", None, ["P2P"], []),
        "ip-172-32-38-1": ("unknown", None, [], []),
        "ip-172-32-34-121": ("unknown", None, [], []),
        "ip-172-32-45-165": ("unknown", None, [], ["net-plugin"])}),
    "nccl-229-ofi-tcp-provider-2.4.6": ("slower-path", {
        "ip-192-168-16-255": ("Socket", False, [], ["ofi-tcp-provider"]),
        "ip-192-168-29-243": ("Socket", False, [], ["ofi-tcp-provider"])}),
    "nccl-928-completion-error-ipv6-peer": ("slower-path", {
        "H100-2": ("unknown", None, [], []),
        "H100-1": ("unknown", None, [], ["fabric-errors"]),
        "H100-5": ("unknown", None, [], ["fabric-errors"])}),
    "nccl-1405-ib-plugin-completion-status": ("slower-path", {
        "kp-ddp-worker-0": ("unknown", None, [], ["fabric-errors"])}),
    "nccl-1814-nvls-init-complete": ("unknown", {
        "hostname-test": ("unknown", None, ["NVLS"], [])}),
    "ray-59778-rayworker-prefix-p2p": ("unknown", {"k8s17": ("unknown", None, ["P2P"], [])}),
    "vllm-15100-rayworker-ib-gdrdma": ("fast-fabric", {
        "deepseek-v2-5-0": ("IB", True, ["P2P"], [])}),
    "fastsafetensors-36-nested-ray-prefix-mnnvl": ("unknown", {
        "spark2": ("unknown", None, [], [])}),
    "nccl-1029-pdsh-prefix-ib-sharp": ("fast-fabric", {
        "rdma-gpu-train-worker-0": ("IB", None, [], [])}),
    "nccl-1016-roce-sriov-vf-k8s": ("fast-fabric", {
        "pytorchjob-summarization-long-data-8vry-ravi-agrawa-worker-2": ("RoCE", None, [], [])}),
    "nccl-997-numeric-hostname-roce-bond": ("fast-fabric", {"64": ("RoCE", None, [], [])}),
    "nccl-1646-initrankconfig-b200": ("unknown", {"d5618706-01": ("unknown", None, [], [])}),
    "nv-peer-memory-56-ipoib-2.4.7": ("fast-fabric", {
        "master_node": ("IB", None, [], []), "secondary_node": ("unknown", None, [], [])}),
    "nccl-333-omni-path-hfi1-2.5.6": ("fast-fabric", {"xxx": ("IB", None, [], [])}),
    "nccl-899-gdr-disabled-no-module": ("slower-path", {
        "21346d5cefce": ("IB", False, [], ["no-gdr-module"]),
        "6a5a91752e39": ("IB", False, [], ["no-gdr-module"])}),
    "nccl-1866-prefixed-version-2.27.6": ("unknown", {
        "cl4-gpu03-vm": ("unknown", None, [], []), "cl4-gpu04-vm": ("unknown", None, [], [])}),
    "aws-ofi-nccl-889-cloudwatch-glued-timestamp": ("unknown", {
        "ip-10-36-29-253": ("unknown", None, [], [])}),
    "pytorch-43258-ib-device-per-line": ("fast-fabric", {"dgx1-1": ("IB", None, [], [])}),
    "aws-ofi-nccl-1020-timestamp-fi-getinfo": ("slower-path", {
        "ip-172-31-3-90": ("unknown", None, [], ["rdma-not-visible"])}),
    "deeplearningexamples-383-gdr-level-distance": ("slower-path", {
        "node-1": ("unknown", None, [], ["gdr-level"])}),
    "nccl-1297-soft-roce-rxe0": ("no-fast-fabric-seen", {
        "master": ("RoCE", None, [], ["no-fast-fabric"])}),
}


def test_every_recorded_log_has_a_case() -> None:
    assert sorted(path.stem for path in DATA.glob("*.log")) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_recorded_log(name: str) -> None:
    verdict, nodes = CASES[name]
    report = read_logs([DATA / f"{name}.log"])
    seen = {node.node: (node.network, node.gdr, node.intra, [c.code for c in node.causes])
            for node in report.nodes}
    assert (report.verdict, seen) == (verdict, nodes)


def test_every_cause_quotes_its_line_with_file_and_number() -> None:
    path = DATA / "nccl-1053-socket-ib-disabled-lo.log"
    (node,) = read_logs([path]).nodes
    lines = path.read_text().splitlines()
    for found in node.causes:
        where, line = found.evidence.split(": ", 1)
        assert where.startswith(f"{path}:") and lines[int(where.rsplit(":", 1)[1]) - 1] == line


def test_two_posts_of_one_thread_read_together() -> None:
    """nccl#952: the IPoIB bootstrap and the IB plugin of one post, the socket channels of the
    next: the same ranks (host, pid, device), so RDMA hardware was there and not used."""
    report = read_logs([DATA / "nccl-952-bootstrap-ipoib.log",
                        DATA / "nccl-952-socket-p2p-ipc.log"])
    (node,) = report.nodes
    assert (node.network, [c.code for c in node.causes], report.verdict) == (
        "Socket", ["rdma-not-visible"], "slower-path")
    assert "Bootstrap : Using ibp12s0" in node.causes[0].evidence


def test_versions_from_bare_and_prefixed_lines() -> None:
    report = read_logs([DATA / "nccl-tests-185-roce-2.19.3.log",
                        DATA / "nccl-2047-verbs-missing-2.29.2.log"])
    assert {node.node: [rank.nccl for rank in node.ranks] for node in report.nodes} == {
        "dgxh100-4": ["2.19.3"], "dgxh100-3": [None], "VM-16-2-ubuntu": ["2.29.2"]}


def test_devices_with_their_link_layer() -> None:
    (node,) = read_logs([DATA / "nccl-1357-ib-sharp-ibext.log"]).nodes[:1]
    assert [(d.name, d.link_layer, d.port) for d in node.devices] == [
        ("mlx5_0", "IB", 1), ("mlx5_1", "IB", 1), ("mlx5_4", "IB", 1), ("mlx5_5", "IB", 1)]


def test_the_first_socket_line_of_old_nccl_is_the_bootstrap() -> None:
    """nccl-tests#29 (NCCL before 2.4.8): NET/Socket first, then NET/IB: the data went over IB,
    the socket interfaces are the bootstrap's, not the network's devices."""
    server3 = read_logs([DATA / "nccl-tests-29-bootstrap-socket-then-ib.log"]).nodes[0]
    assert [d.name for d in server3.devices] == ["mlx5_0"]
    assert "virbr0" in server3.causes[0].evidence


def test_prefixed_version_lines_of_nccl_2_27() -> None:
    report = read_logs([DATA / "nccl-1866-prefixed-version-2.27.6.log"])
    assert [[rank.nccl for rank in node.ranks] for node in report.nodes] == [
        ["2.27.6"], ["2.27.6"]]


def test_a_timestamp_glued_to_the_host_is_not_the_host() -> None:
    """aws-ofi-nccl#889: CloudWatch's ``2025-05-16T16:39:51.208-07:00ip-10-36-29-253:79:79``."""
    report = read_logs([DATA / "aws-ofi-nccl-889-cloudwatch-glued-timestamp.log"])
    assert [(node.node, len(node.ranks)) for node in report.nodes] == [("ip-10-36-29-253", 1)]
    assert [rank.nccl for rank in report.nodes[0].ranks] == ["2.21.5"]


def test_nccl_2_3_lists_its_devices_one_a_line() -> None:
    """pytorch#43258: NCCL 2.3 printed ``NET/IB: [n] mlx5_64:1/IB`` per device, not one
    ``NET/IB : Using ... ; OOB`` line, and no ``Using network`` line."""
    (node,) = read_logs([DATA / "pytorch-43258-ib-device-per-line.log"]).nodes
    assert [d.name for d in node.devices][:3] == ["mlx5_64", "mlx5_128", "mlx5_36"]
    assert len(node.devices) == 18 and {d.link_layer for d in node.devices} == {"IB"}


def test_rank_labels_from_every_comm_line_form() -> None:
    """``comm 0x.. rank N nranks`` (Init START/COMPLETE, ncclCommInitRankConfig) and 2.19+'s
    ``comm 0x.. rank N nRanks .. MNNVL``: each names the rank (nccl#1814, fastsafetensors#36)."""
    labels = {name: [rank.label for node in read_logs([DATA / f"{name}.log"]).nodes
                     for rank in node.ranks]
              for name in ("nccl-1814-nvls-init-complete",
                           "fastsafetensors-36-nested-ray-prefix-mnnvl",
                           "nccl-1646-initrankconfig-b200")}
    assert labels == {
        "nccl-1814-nvls-init-complete": ["rank 35", "rank 34", "rank 36", "rank 32"],
        "fastsafetensors-36-nested-ray-prefix-mnnvl": ["rank 1"],
        "nccl-1646-initrankconfig-b200": ["pid 1106801 [2]", "rank 6", "pid 1106806 [7]",
                                          "pid 1106800 [1]", "pid 1106803 [4]"]}
