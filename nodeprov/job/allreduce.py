"""nodeprov's verification job: one DDP step, then an all-reduce sweep with every result checked.

nodeprov copies this file to every node and starts it there with the venv's torchrun. It imports
only torch and the standard library, so a person can run it by hand the same way::

    torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d \\
        --rdzv-endpoint node1:29500 --rdzv-id check1 \\
        allreduce.py --backend nccl --result /tmp/nodeprov-job.json

Other options (defaults): --min-bytes 8 --max-bytes 67108864 --factor 4 --warmup 5 --iters 20
--seconds-per-size 0.5 (fewer iterations where ops are slow) --timeout 60 (seconds before
process-group setup or a collective gives up).

First every rank runs a small kernel on its share of the node's GPUs (local ranks take turns,
so together they cover each GPU once) and compares it with the CPU result: a build without
kernels for the GPU ("no kernel image is available") or a dead GPU stops the job there, with a
``NODEPROV_GPU_CHECK`` line naming the GPU. Nodes without a usable GPU skip it.

Local rank 0 of every node writes the same JSON result to --result and prints it as one line,
``NODEPROV_RESULT {...}``. Bus bandwidth is nccl-tests' definition: algbw * 2(n-1)/n.
Exit status: 0 when every check passed, 1 when one failed (a wrong sum, or DDP replicas that
differ); an exception exits non-zero with its traceback and writes no result.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
import warnings
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

# torch warns on import when numpy is missing, which the job does not need; that line would only
# clutter the output tail nodeprov shows when the job fails.
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
    import torch
    import torch.distributed as dist
    from torch.distributed.elastic.multiprocessing.errors import record
    from torch.nn.parallel import DistributedDataParallel

RESULT_PREFIX = "NODEPROV_RESULT "
GPU_CHECK_PREFIX = "NODEPROV_GPU_CHECK "
ELEMENT_BYTES = 4  # float32: sums of small integers stay exact, so results compare with ==
MIN_ITERS = 3  # timed ops per size however slow: one op alone is too noisy to report
HOSTNAME_BYTES = 256


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


def gather_hostnames(device: torch.device, world_size: int) -> list[str]:
    """Every rank's hostname, by rank."""
    # Not all_gather_object: it needs numpy, which a venv with only torch lacks.
    name = socket.gethostname().encode()[:HOSTNAME_BYTES]
    mine = torch.zeros(HOSTNAME_BYTES, dtype=torch.uint8, device=device)
    mine[: len(name)] = torch.tensor(list(name), dtype=torch.uint8)
    gathered = [torch.empty_like(mine) for _ in range(world_size)]
    dist.all_gather(gathered, mine)
    return [bytes(t.tolist()).rstrip(b"\0").decode(errors="replace") for t in gathered]


def slowest(seconds: float, device: torch.device) -> float:
    """The largest of every rank's ``seconds``: a training step waits for the slowest rank."""
    value = torch.tensor([seconds], dtype=torch.float64, device=device)
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return float(value.item())


def nccl_version() -> str:
    # torch leaves version() unannotated; without torch installed mypy sees no call at all.
    parts = torch.cuda.nccl.version()  # type: ignore[no-untyped-call,unused-ignore]
    return ".".join(str(part) for part in parts)


def run_checks(options: argparse.Namespace, device: torch.device, started: float,
               gpus_checked: int) -> dict[str, Any]:
    rank, world_size = dist.get_rank(), dist.get_world_size()
    checked = torch.tensor([gpus_checked], dtype=torch.int64, device=device)
    dist.all_reduce(checked)
    hostnames = gather_hostnames(device, world_size)
    ddp = ddp_step(device, rank)
    sizes = [measure(size, options, device, rank, world_size)
             for size in message_sizes(options.min_bytes, options.max_bytes, options.factor)]
    wrong = sum(row["wrong"] for row in sizes)
    return {
        "ok": ddp["ok"] and wrong == 0,
        "backend": options.backend,
        "world_size": world_size,
        "nnodes": int(os.environ.get("GROUP_WORLD_SIZE", len(set(hostnames)))),
        "hostnames": hostnames,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "nccl": nccl_version() if options.backend == "nccl" else None,
        "warmup": options.warmup,
        "iters": options.iters,
        "gpus_checked": int(checked.item()),
        "ddp": ddp,
        "sizes": sizes,
        "wrong": wrong,
        # Every value is the same on all ranks, so every node writes the same file.
        "duration_s": slowest(time.perf_counter() - started, device),
    }


def publish(result: dict[str, Any], path: str) -> None:
    text = json.dumps(result)
    partial = f"{path}.{os.getpid()}.tmp"
    with open(partial, "w", encoding="utf-8") as out:
        out.write(text + "\n")
    os.replace(partial, path)  # the admin side never reads a half-written file
    print(RESULT_PREFIX + text, flush=True)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    def at_least(low: int) -> Any:
        def check(text: str) -> int:
            value = int(text)
            if value < low:
                raise argparse.ArgumentTypeError(f"{value} is below the minimum {low}")
            return value
        return check

    def non_negative(text: str) -> float:
        value = float(text)
        if not value >= 0:  # also NaN
            raise argparse.ArgumentTypeError(f"{text} is not a number of seconds >= 0")
        return value

    parser = argparse.ArgumentParser(description="All-reduce verification job (run by torchrun).")
    parser.add_argument("--backend", choices=("nccl", "gloo"), required=True)
    parser.add_argument("--result", required=True, help="JSON result file, written on every node")
    parser.add_argument("--min-bytes", type=at_least(1), default=8)
    parser.add_argument("--max-bytes", type=at_least(1), default=64 * 1024 * 1024)
    parser.add_argument("--factor", type=at_least(2), default=4)
    parser.add_argument("--warmup", type=at_least(1), default=5)
    parser.add_argument("--iters", type=at_least(1), default=20)
    parser.add_argument("--seconds-per-size", type=non_negative, default=0.5,
                        help="about how long each size may take (fewer iterations on a slow "
                        "link, at least 3); 0: always --iters")
    parser.add_argument("--timeout", type=at_least(1), default=60,
                        help="seconds before process-group setup or a collective gives up")
    options = parser.parse_args(argv)
    if options.min_bytes > options.max_bytes:
        parser.error("--min-bytes must not exceed --max-bytes")
    return options


def main(argv: Sequence[str] | None = None) -> int:
    started = time.perf_counter()
    options = parse_args(argv)
    local_rank = int(os.environ["LOCAL_RANK"])
    gpus_checked, failed = check_gpus(local_rank, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    if failed:  # before the process group: a broken GPU must not hang a collective
        print("\n".join(GPU_CHECK_PREFIX + f"FAILED {line}" for line in failed), file=sys.stderr,
              flush=True)
        return 1
    device = torch.device("cpu")
    if options.backend == "nccl":
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    dist.init_process_group(options.backend, timeout=timedelta(seconds=options.timeout))
    try:
        result = run_checks(options, device, started, gpus_checked)
    finally:
        dist.destroy_process_group()
    if local_rank == 0:
        publish(result, options.result)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    # record() lets torchrun's failure summary show this rank's exception, not only its exit code.
    status = record(main)()
    sys.stdout.flush()
    sys.stderr.flush()
    # Past this point only interpreter teardown remains, where torch's gloo objects sometimes
    # abort ("terminate called without an active exception", SIGABRT; seen about once in ten
    # 3-node runs) after the work is done and the result written: skip it.
    os._exit(status or 0)
