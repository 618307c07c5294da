"""A small real DDP training run for ``nodeprov run``'s tests (gloo, CPU).

    torchrun --nnodes 3 --nproc-per-node 1 ... train.py --steps 5 [--raise-rank 1]
             [--finish-rank 0] [--step-seconds 0.2]

Each step trains a linear model on random data through DistributedDataParallel (its gradients
are all-reduced); rank 0 prints the loss. At the end every rank checks that its weights equal
rank 0's (DDP keeps them in step) and prints ``done``. ``--raise-rank R`` makes rank R raise a
ValueError at step 2, as a buggy script would; ``--finish-rank R`` makes rank R end well (exit
0) at step 2, while the others still train, as a script whose ranks do not end together would.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--raise-rank", type=int, default=-1)
    parser.add_argument("--finish-rank", type=int, default=-1)
    parser.add_argument("--step-seconds", type=float, default=0.0)
    args = parser.parse_args()
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(rank)
    model = DistributedDataParallel(torch.nn.Linear(8, 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(args.steps):
        if rank == args.raise_rank and step == 2:
            raise ValueError(f"rank {rank} fails on purpose at step {step}")
        if rank == args.finish_rank and step == 2:
            print(f"rank {rank} finishes early at step {step}", flush=True)
            os._exit(0)
        loss = model(torch.randn(16, 8)).pow(2).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if rank == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
        time.sleep(args.step_seconds)
    weights = torch.cat([p.detach().flatten() for p in model.parameters()])
    reference = weights.clone()
    dist.broadcast(reference, src=0)
    if not torch.equal(weights, reference):
        raise SystemExit(f"rank {rank}: weights differ from rank 0's")
    print(f"rank {rank} done, world size {dist.get_world_size()}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    # gloo's objects sometimes abort in interpreter teardown, after the work is done
    # ("terminate called without an active exception", SIGABRT; seen in CI under load, as
    # nodeprov's own job saw it): skip the teardown, as nodeprov's job
    # (nodeprov/proof/allreduce) does
    os._exit(0)
