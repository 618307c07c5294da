"""``peermem``: the GPUDirect RDMA peer-memory module is loaded, now and after a reboot, where
it is installed and the node has both a GPU and an RDMA port.

    - name: GPUDirect RDMA peer memory
      peermem: {}

NCCL moves data between the GPU and the NIC directly only while ``nvidia_peermem`` (the
driver's, from 470 on) or the older ``nv_peer_mem`` is loaded; without it, it stages through
host memory (its log: no ``/GDRDMA``). The facts say which is loaded and which is installed
(``Facts.rdma``); the task loads the first one installed with ``modprobe`` and lists it in
/etc/modules-load.d, which systemd-modules-load reads at boot. A node without a GPU, without
RDMA ports, or with only EFA (GPUDirect there goes through the EFA driver) gets nothing, and the
plan says so; where neither module is installed it warns, saying what to install (the node
works without GPUDirect RDMA, only slower).
"""

from __future__ import annotations

from dataclasses import dataclass

from nodeprov.remote import reader
from nodeprov.remote.rdmatext import PEER_MEMORY
from nodeprov.tasks.base import Change, Context, Plan, Probe, Run, TaskType, Write
from nodeprov.tasks.textfiles import blocks

MODULES_LOAD = "/etc/modules-load.d/nodeprov-peermem.conf"


@dataclass(frozen=True)
class PeermemParams:
    """No parameters: the module comes from the facts."""


def probe(params: PeermemParams) -> Probe:
    return reader.read_many_probe(MODULES_LOAD)


def plan(ctx: Context, params: PeermemParams, observed: str) -> Plan:
    rdma = ctx.facts.rdma
    if ctx.facts.gpu_count == 0:
        return Plan.noop("no GPU on this node: no GPUDirect RDMA to enable")
    if not any(port.kind in ("IB", "RoCE") for port in rdma.ports):
        return Plan.noop("no InfiniBand or RoCE port on this node: no GPUDirect RDMA to enable"
                         + (" (EFA's goes through its own driver)" if rdma.present else ""))
    loaded = [name for name in PEER_MEMORY if name in rdma.modules_loaded]
    installed = [name for name in PEER_MEMORY if name in rdma.peer_memory_installed]
    module = (loaded or installed or [""])[0]
    if not module:
        return Plan.noop(warnings=[
            "no peer-memory module installed (modinfo nvidia_peermem, nv_peer_mem): NCCL "
            "stages GPU-NIC traffic through host memory; install the NVIDIA driver's "
            "nvidia-peermem (driver 470 or newer, built against the node's OFED/rdma-core), "
            "then run this task again"])
    old = reader.observed_files(observed).get(MODULES_LOAD)
    text = ("# Written by nodeprov (peermem task): GPUDirect RDMA for NCCL; edits are "
            f"overwritten.\n{module}\n")
    changes = []
    if old != text:
        changes.append(Change(f"load {module} at boot ({MODULES_LOAD})",
                              (Write(MODULES_LOAD, text),),
                              diff=blocks.unified_diff(MODULES_LOAD, old, text)))
    if not loaded:
        changes.append(Change(f"load {module} now", (Run(
            ("modprobe", module),
            hint=f"dmesg | grep -i {module} tells why; its build must match the running "
                 "driver and the RDMA stack"),)))
    if changes:
        return Plan.of(*changes)
    return Plan.noop(f"{module} loaded and in {MODULES_LOAD}")


TASK = TaskType("peermem", "Load the GPUDirect RDMA peer-memory module, now and at boot",
                PeermemParams, probe, plan)
