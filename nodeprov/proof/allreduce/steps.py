"""What the job checks besides the sweep: each GPU computes, one DDP step keeps the replicas
equal, and which host each rank runs on.

    gpus_checked, failed = check_gpus(local_rank=0, local_world_size=8)
"""

from __future__ import annotations

import socket
from typing import Any

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel

HOSTNAME_BYTES = 256


def check_gpus(local_rank: int, local_world_size: int) -> tuple[int, list[str]]:
    """Run a kernel on GPUs local_rank, local_rank + local_world_size, ...; (GPUs checked, what
    failed). Integer-valued float32 math, so the GPU must match the CPU exactly."""
    if not torch.cuda.is_available():
        return 0, []
    values = torch.arange(1024, dtype=torch.float32)  # every partial sum exact: < 2**24
    expected = (values * 3 + 1).sum()
    indices = range(local_rank, torch.cuda.device_count(), local_world_size)
    failed = []
    for index in indices:
        major, minor = torch.cuda.get_device_capability(index)
        gpu = f"GPU {index} ({torch.cuda.get_device_name(index)}, sm_{major}{minor})"
        try:
            got = (values.to(f"cuda:{index}") * 3 + 1).sum().cpu()
        except RuntimeError as error:  # "CUDA error: no kernel image is available ..."
            failed.append(f"{gpu}: {str(error).strip().splitlines()[0]}")
            continue
        if not torch.equal(got, expected):
            failed.append(f"{gpu}: wrong result {got.item()} (CPU: {expected.item()})")
    return len(indices), failed


def ddp_step(device: torch.device, rank: int) -> dict[str, Any]:
    """Train one step with DDP on data that differs per rank; replicas must stay identical."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 8)
    ).to(device)
    device_ids = [device] if device.type == "cuda" else None
    replica = DistributedDataParallel(model, device_ids=device_ids)
    # Different data per rank gives different local gradients, so only a working gradient
    # all-reduce leaves the replicas equal after the step.
    data = torch.Generator().manual_seed(1000 + rank)
    inputs = torch.randn(16, 32, generator=data).to(device)
    targets = torch.randn(16, 8, generator=data).to(device)
    optimizer = torch.optim.SGD(replica.parameters(), lr=0.1)
    torch.autograd.backward(torch.nn.functional.mse_loss(replica(inputs), targets))
    optimizer.step()

    params = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
    highest, lowest = params.clone(), params.clone()
    dist.all_reduce(highest, op=dist.ReduceOp.MAX)
    dist.all_reduce(lowest, op=dist.ReduceOp.MIN)
    max_abs_diff = float((highest - lowest).abs().max().item())
    return {"ok": max_abs_diff == 0.0, "max_abs_diff": max_abs_diff}


def gather_hostnames(device: torch.device, world_size: int) -> list[str]:
    """Every rank's hostname, by rank."""
    # Not all_gather_object: it needs numpy, which a venv with only torch lacks.
    name = socket.gethostname().encode()[:HOSTNAME_BYTES]
    mine = torch.zeros(HOSTNAME_BYTES, dtype=torch.uint8, device=device)
    mine[: len(name)] = torch.tensor(list(name), dtype=torch.uint8)
    gathered = [torch.empty_like(mine) for _ in range(world_size)]
    dist.all_gather(gathered, mine)
    return [bytes(t.tolist()).rstrip(b"\0").decode(errors="replace") for t in gathered]


def nccl_version() -> str:
    # torch leaves version() unannotated; without torch installed mypy sees no call at all.
    parts = torch.cuda.nccl.version()  # type: ignore[no-untyped-call,unused-ignore]
    return ".".join(str(part) for part in parts)
