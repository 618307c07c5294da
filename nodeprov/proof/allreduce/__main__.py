"""The job's entry point: ``python -m nodeprov_allreduce --backend gloo --result PATH`` (under
torchrun, which sets each rank's environment).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.elastic.multiprocessing.errors import record

from .steps import check_gpus, ddp_step, gather_hostnames, nccl_version
from .sweep import measure, message_sizes, slowest

RESULT_PREFIX = "NODEPROV_RESULT "
GPU_CHECK_PREFIX = "NODEPROV_GPU_CHECK "


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
