"""The all-reduce sweep: each message size timed on every rank and every result checked.

    >>> message_sizes(8, 1024, 4)
    [8, 32, 128, 512, 1024]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import torch
import torch.distributed as dist

ELEMENT_BYTES = 4  # float32: sums of small integers stay exact, so results compare with ==
MIN_ITERS = 3  # timed ops per size however slow: one op alone is too noisy to report


def message_sizes(min_bytes: int, max_bytes: int, factor: int) -> list[int]:
    """The sweep's message sizes in bytes, ending at the maximum: whole float32 elements.

    >>> message_sizes(8, 1024, 4)
    [8, 32, 128, 512, 1024]
    """
    wanted: list[int] = []
    size = min_bytes
    while size < max_bytes:
        wanted.append(size)
        size *= factor
    wanted.append(max_bytes)
    aligned = (max(ELEMENT_BYTES, each - each % ELEMENT_BYTES) for each in wanted)
    return list(dict.fromkeys(aligned))


def expected_sum(world_size: int) -> int:
    """Every element after all-reducing rank + 1 from each rank: 1 + 2 + ... + n.

    >>> expected_sum(4)
    10
    """
    return world_size * (world_size + 1) // 2


def count_wrong(result: torch.Tensor, expected: float) -> torch.Tensor:
    """How many elements of ``result`` differ from ``expected``, as a tensor on its device.

    Staying on the device means counting never waits for the GPU.
    """
    return torch.count_nonzero(result != expected)


def bus_bandwidth(algbw: float, world_size: int) -> float:
    """nccl-tests' all-reduce bus bandwidth: what each link carried, comparable across sizes.

    >>> bus_bandwidth(10.0, 4)
    15.0
    """
    return algbw * 2 * (world_size - 1) / world_size


def synchronize(device: torch.device) -> None:
    # CUDA collectives return before the data moved; gloo ones are already done.
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def iterations(per_op: float, options: argparse.Namespace) -> tuple[int, int]:
    """Warmup ops after the first one, and timed ops, for a size whose first op took ``per_op``
    seconds: at most --warmup and --iters, cut to about --seconds-per-size (but never below
    MIN_ITERS timed ops), so large messages on a slow link do not stretch the sweep to minutes.

    >>> iterations(0.001, argparse.Namespace(warmup=5, iters=20, seconds_per_size=0.5))
    (4, 20)
    >>> iterations(0.3, argparse.Namespace(warmup=5, iters=20, seconds_per_size=0.5))
    (0, 3)
    """
    if not options.seconds_per_size:
        return options.warmup - 1, options.iters
    fits = int(options.seconds_per_size / max(per_op, 1e-9))
    return (max(0, min(options.warmup - 1, fits // 4)),
            max(MIN_ITERS, min(options.iters, fits)))


def measure(size_bytes: int, options: argparse.Namespace, device: torch.device, rank: int,
            world_size: int) -> dict[str, Any]:
    """All-reduce one message size: the slowest rank's mean time, and every result checked."""
    count = size_bytes // ELEMENT_BYTES
    buffer = torch.empty(count, dtype=torch.float32, device=device)
    expected = float(expected_sum(world_size))
    wrong = torch.zeros(1, dtype=torch.int64, device=device)

    def timed_op() -> float:
        buffer.fill_(rank + 1)  # all_reduce works in place, so every op starts from fresh values
        # Each op is timed alone: the refill and the check around it are not network time.
        synchronize(device)
        start = time.perf_counter()
        dist.all_reduce(buffer)
        synchronize(device)
        seconds = time.perf_counter() - start
        wrong.add_(count_wrong(buffer, expected))
        return seconds

    # The first op warms up and sizes the rest; every rank sees the same slowest time, so all
    # run the same number of collectives.
    warmup, iters = iterations(slowest(timed_op(), device), options)
    for _ in range(warmup):
        timed_op()
    elapsed = sum(timed_op() for _ in range(iters))

    dist.all_reduce(wrong)
    seconds = slowest(elapsed, device) / iters
    algbw = size_bytes / seconds / 1e9
    return {
        "bytes": size_bytes,
        "count": count,
        "iters": iters,
        "time_us": seconds * 1e6,
        "algbw_gbps": algbw,
        "busbw_gbps": bus_bandwidth(algbw, world_size),
        "wrong": int(wrong.item()),
    }


def slowest(seconds: float, device: torch.device) -> float:
    """The largest of every rank's ``seconds``: a training step waits for the slowest rank."""
    value = torch.tensor([seconds], dtype=torch.float64, device=device)
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return float(value.item())
