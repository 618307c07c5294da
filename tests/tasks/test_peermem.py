"""The peermem task on recorded facts: the ports of tests/data/rdma (sources in its README), an
8xA100 node's nvidia-smi (tests/data/nvidia-smi), and facts.sh's ``rdma_modules`` lines as it
prints them (written for the test: no peer-memory module exists on this machine)."""

from __future__ import annotations

import pytest

from nodeprov.remote.rdma import read_rdma
from nodeprov.tasks.base import Plan, Run, Write
from nodeprov.tasks.peermem import MODULES_LOAD, TASK
from tests.remote.rdma_trees import DATA, port_lines
from tests.tasks.kit import make_facts, one_node, plan_task
from tests.tasks.torch.test_torch import gpu

IB = port_lines(ibstat=DATA / "ibstat-gpud-752-ib.txt")  # mlx5_7, InfiniBand, Active
A100 = gpu("driver-450-cuda110-8xa100-mig")
INSTALLED = ("loaded ib_core\nloaded mlx5_ib\ninstalled nvidia_peermem "
             "/lib/modules/6.8.0-49-generic/updates/dkms/nvidia-peermem.ko\n")
FILE = ("# Written by nodeprov (peermem task): GPUDirect RDMA for NCCL; edits are overwritten.\n"
        "nvidia_peermem\n")


def run(modules: str, file: str | None = None, ports: str = IB, with_gpu: bool = True) -> Plan:
    facts = make_facts(gpu=A100 if with_gpu else None,
                       rdma=read_rdma({"rdma_ports": ports, "rdma_modules": modules}))
    return plan_task(TASK, {}, {MODULES_LOAD: file}, context=one_node(facts))


def actions(result: Plan) -> list[object]:
    return [action for change in result.changes for action in change.actions]


def test_an_installed_module_is_loaded_now_and_listed_for_boot() -> None:
    result = run(INSTALLED)
    assert actions(result) == [Write(MODULES_LOAD, FILE), Run(("modprobe", "nvidia_peermem"))]
    assert [change.summary for change in result.changes] == [
        f"load nvidia_peermem at boot ({MODULES_LOAD})", "load nvidia_peermem now"]


def test_loaded_and_listed_is_in_sync_and_loaded_but_unlisted_only_writes() -> None:
    loaded = "loaded ib_core\nloaded nvidia_peermem\n"
    assert run(loaded, FILE) == Plan.noop(f"nvidia_peermem loaded and in {MODULES_LOAD}")
    assert actions(run(loaded)) == [Write(MODULES_LOAD, FILE)]
    # the older Mellanox module, loaded, is kept rather than replaced
    assert actions(run("loaded nv_peer_mem\n")) == [
        Write(MODULES_LOAD, FILE.replace("nvidia_peermem", "nv_peer_mem"))]


def test_none_installed_warns_saying_what_to_install() -> None:
    result = run("loaded ib_core\n")
    assert result.in_sync and not result.changes
    assert result.warnings[0].startswith("no peer-memory module installed (modinfo "
                                         "nvidia_peermem, nv_peer_mem): NCCL stages")
    assert "install the NVIDIA driver's nvidia-peermem" in result.warnings[0]


@pytest.mark.parametrize(("ports", "with_gpu", "note"), [
    (IB, False, "no GPU on this node: no GPUDirect RDMA to enable"),
    ("", True, "no InfiniBand or RoCE port on this node: no GPUDirect RDMA to enable"),
    ("efa0 1 state 4: ACTIVE\n", True, "no InfiniBand or RoCE port on this node: no GPUDirect "
     "RDMA to enable (EFA's goes through its own driver)"),
])
def test_nothing_without_a_gpu_or_an_ib_or_roce_port(ports: str, with_gpu: bool,
                                                     note: str) -> None:
    assert run(INSTALLED, ports=ports, with_gpu=with_gpu) == Plan.noop(note)
