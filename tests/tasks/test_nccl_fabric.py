"""The nccl_fabric task on recorded RDMA ports (tests/data/rdma, sources in its README): which
ports NCCL_IB_HCA names, which GID index it takes, and what it leaves alone. Its four steps on
the test cluster, and verify's check of a new session, run with memlock's on one node
(tests/tasks/test_memlock.py), so one test cluster serves both."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from nodeprov.remote.rdma import read_rdma
from nodeprov.tasks.base import Plan, TaskFailed, Write
from nodeprov.tasks.nccl_env import ENVIRONMENT, NCCL_CONF
from nodeprov.tasks.nccl_fabric import TASK
from nodeprov.tasks.textfiles import blocks
from tests.remote.rdma_trees import DATA, port_lines
from tests.tasks.kit import make_facts, one_node, plan_task

BEGIN, END = blocks.begin_marker("nccl_fabric"), blocks.end_marker("nccl_fabric")
# NVIDIA/nccl#1573's pod: mlx5_0 at 10.152.0.12 (GID 7, RoCE v2), mlx5_1 at 10.152.4.12 (GID 7);
# its ports' state is not in show_gids: written as an Active RoCE port's sysfs words
POD = port_lines(gids=DATA / "show-gids-nccl-1573-pod-macvlan.txt",
                 state={"state": "4: ACTIVE", "link_layer": "Ethernet"})


def run(ports: str, subnet: str, files: Mapping[str, str | None] | None = None) -> Plan:
    facts = make_facts(rdma=read_rdma({"rdma_ports": ports}))
    return plan_task(TASK, {"subnet": subnet}, files or {ENVIRONMENT: None, NCCL_CONF: None},
                     context=one_node(facts))


def writes(result: Plan) -> dict[str, str]:
    return {action.path: action.content for change in result.changes
            for action in change.actions if isinstance(action, Write)}


def test_roce_ports_get_the_exact_hca_list_and_the_subnet_gid_index() -> None:
    result = run(POD, "10.152.0.0/16")
    assert writes(result) == {
        ENVIRONMENT: f'{BEGIN}\nNCCL_IB_HCA="=mlx5_0:1,mlx5_1:1"\nNCCL_IB_GID_INDEX="7"\n{END}\n',
        NCCL_CONF: f"{BEGIN}\nNCCL_IB_HCA==mlx5_0:1,mlx5_1:1\nNCCL_IB_GID_INDEX=7\n{END}\n"}
    assert result.warnings == () and result.conflicts == ()
    again = run(POD, "10.152.0.0/16", writes(result))
    assert again.in_sync and again.notes == (
        f"{ENVIRONMENT} and {NCCL_CONF} already set NCCL_IB_HCA==mlx5_0:1,mlx5_1:1, "
        "NCCL_IB_GID_INDEX=7",)


def test_a_rail_outside_the_subnet_is_named_and_the_index_kept() -> None:
    result = run(POD, "10.152.0.0/22")  # mlx5_1's 10.152.4.12 is outside
    assert 'NCCL_IB_GID_INDEX="7"' in writes(result)[ENVIRONMENT]
    assert result.warnings == ("mlx5_1/1: no RoCE v2 GID with a 10.152.0.0/22 address",)


def test_no_gid_in_the_subnet_leaves_the_index_to_nccl() -> None:
    result = run(POD, "192.0.2.0/24")
    assert "NCCL_IB_GID_INDEX" not in writes(result)[NCCL_CONF]
    assert result.warnings == ("mlx5_0/1, mlx5_1/1: no RoCE v2 GID with a 192.0.2.0/24 "
                               "address; NCCL_IB_GID_INDEX left to NCCL",)


def test_subnet_gids_at_different_indexes_fail_naming_each_port() -> None:
    moved = POD.replace("mlx5_1 1 gid 7 ", "mlx5_1 1 gid 9 ")
    with pytest.raises(TaskFailed, match=r"different indexes \(mlx5_0/1: 7; mlx5_1/1: 9\)"):
        run(moved, "10.152.0.0/16")


def test_ib_ports_down_are_left_out_and_no_gid_index_is_set() -> None:
    # mooncake#1999's ibstat: mlx5_0 and mlx5_1 Active, mlx5_10 Down (Disabled)
    ports = port_lines(ibstat=DATA / "ibstat-mooncake-1999-roce.txt")
    ib = ports.replace("Ethernet", "InfiniBand")  # the same ports as IB: no GID index wanted
    assert writes(run(ib, "10.0.0.0/8"))[NCCL_CONF] == (
        f"{BEGIN}\nNCCL_IB_HCA==mlx5_0:1,mlx5_1:1\n{END}\n")
    # gpud#752's single IB port
    one = port_lines(ibstat=DATA / "ibstat-gpud-752-ib.txt")
    assert writes(run(one, "10.0.0.0/8"))[NCCL_CONF] == f"{BEGIN}\nNCCL_IB_HCA==mlx5_7:1\n{END}\n"


def test_nothing_without_rdma_and_a_warning_when_no_port_is_active() -> None:
    assert run("", "192.0.2.0/24") == Plan.noop(
        "no InfiniBand or RoCE port on this node: nothing to select")
    down = port_lines(ibstat=DATA / "ibstat-mooncake-1999-roce.txt").replace("4: ACTIVE",
                                                                             "2: INIT")
    result = run(down, "10.0.0.0/8")
    assert result.in_sync and result.warnings[0].startswith("no Active RDMA port (mlx5_0/1 "
                                                            "2: INIT")


def test_a_users_earlier_nccl_conf_line_is_a_conflict() -> None:
    first = run(POD, "10.152.0.0/16")
    conf = "NCCL_IB_HCA=mlx5\n" + writes(first)[NCCL_CONF]
    result = run(POD, "10.152.0.0/16", {**writes(first), NCCL_CONF: conf})
    assert result.changes == () and result.conflicts == (
        f"{NCCL_CONF}:1 'NCCL_IB_HCA=mlx5' overrides nodeprov's NCCL_IB_HCA='=mlx5_0:1,mlx5_1:1' "
        f"(NCCL keeps the first assignment): comment it out: sed -i "
        f"'/^NCCL_IB_HCA=mlx5$/s/^/# /' {NCCL_CONF}",)


def test_efa_only_is_left_to_the_ofi_plugin() -> None:
    efa = read_rdma({"rdma_ports": "efa0 1 state 4: ACTIVE\n"})
    result = plan_task(TASK, {"subnet": "10.0.0.0/8"}, {ENVIRONMENT: None, NCCL_CONF: None},
                       context=one_node(make_facts(rdma=efa)))
    assert result.notes == ("no InfiniBand or RoCE port on this node (EFA only: NCCL reaches "
                            "it through the OFI plugin): nothing to select",)


def test_roce_ports_beside_ib_ones_are_left_out_with_a_warning() -> None:
    # gpud#752's IB port beside NVIDIA/nccl#1573's RoCE ports, one node's as on Azure's HPC VMs
    mixed = port_lines(ibstat=DATA / "ibstat-gpud-752-ib.txt") + POD
    result = run(mixed, "10.152.0.0/16")
    assert writes(result)[NCCL_CONF] == f"{BEGIN}\nNCCL_IB_HCA==mlx5_7:1\n{END}\n"
    assert result.warnings == ("left out of NCCL_IB_HCA, beside the InfiniBand ports: RoCE "
                               "mlx5_0/1, mlx5_1/1 (NCCL would mix the two: transport-mismatch)",)
