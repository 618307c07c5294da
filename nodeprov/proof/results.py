"""Read the verification job's JSON result and render its table rows and verdict line.

The job (``nodeprov.proof.allreduce``) writes one JSON object per run; this side checks its shape
once, so everything after works on typed values::

    result = parse_result(text)           # or parse_result(result_json_in(stdout))
    print(verdict(result))                # PASS: 2 nodes, 16 ranks (nccl 2.21.5): ...
    for row in table_rows(result): ...    # one row per message size, cells as in TABLE_HEADER
    result_json(result)                   # the same as data in base units, for --json
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from nodeprov.util.safejson import loads
from nodeprov.util.units import clipped, counted, human_bytes

RESULT_PREFIX = "NODEPROV_RESULT "  # the line the job prints alongside the file
TABLE_HEADER = ("size", "elements", "iters", "time (us)", "algbw (GB/s)", "busbw (GB/s)",
                "wrong")
MAX_RESULT_CHARS = 1 << 20  # a sweep of 40 sizes writes some 8 KB


@dataclass(frozen=True)
class SizeResult:
    """One message size of the sweep: ``iters`` timed ops (fewer where ops are slow), ``wrong``
    elements over all ranks and ops."""

    bytes: int
    count: int
    iters: int
    time_us: float
    algbw_gbps: float
    busbw_gbps: float
    wrong: int


@dataclass(frozen=True)
class JobResult:
    ok: bool
    backend: str
    world_size: int
    nnodes: int
    hostnames: tuple[str, ...]
    torch: str
    cuda: str | None
    nccl: str | None
    warmup: int
    iters: int
    ddp_ok: bool
    ddp_max_abs_diff: float
    sizes: tuple[SizeResult, ...]
    wrong: int
    duration_s: float


def _get(data: Any, key: str, kind: type | tuple[type, ...], where: str = "") -> Any:
    name = f"{where}.{key}" if where else key
    if not isinstance(data, dict) or key not in data:
        raise ValueError(f"job result: no field {name}")
    value = data[key]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    # bool passes isinstance(value, int), but is never a valid count or time.
    if (isinstance(value, bool) and bool not in kinds) or not isinstance(value, kinds):
        expected = " or ".join(k.__name__ for k in kinds)
        raise ValueError(f"job result: {name} is {clipped(repr(value), 40)}, "
                         f"expected {expected}")
    return value


def _size(row: Any, index: int) -> SizeResult:
    where = f"sizes[{index}]"
    number = (int, float)
    return SizeResult(
        bytes=_get(row, "bytes", int, where),
        count=_get(row, "count", int, where),
        iters=_get(row, "iters", int, where),
        time_us=float(_get(row, "time_us", number, where)),
        algbw_gbps=float(_get(row, "algbw_gbps", number, where)),
        busbw_gbps=float(_get(row, "busbw_gbps", number, where)),
        wrong=_get(row, "wrong", int, where),
    )


def parse_result(text: str) -> JobResult:
    """The job's JSON as typed values; ValueError names the first field that is off."""
    try:
        data = loads(text, what="job result", max_chars=MAX_RESULT_CHARS)
    except json.JSONDecodeError as error:
        raise ValueError(f"job result is not JSON: {error}") from None
    ddp = _get(data, "ddp", dict)
    optional_text = (str, type(None))
    return JobResult(
        ok=_get(data, "ok", bool),
        backend=_get(data, "backend", str),
        world_size=_get(data, "world_size", int),
        nnodes=_get(data, "nnodes", int),
        hostnames=tuple(str(name) for name in _get(data, "hostnames", list)),
        torch=_get(data, "torch", str),
        cuda=_get(data, "cuda", optional_text),
        nccl=_get(data, "nccl", optional_text),
        warmup=_get(data, "warmup", int),
        iters=_get(data, "iters", int),
        ddp_ok=_get(ddp, "ok", bool, "ddp"),
        ddp_max_abs_diff=float(_get(ddp, "max_abs_diff", (int, float), "ddp")),
        sizes=tuple(_size(row, i) for i, row in enumerate(_get(data, "sizes", list))),
        wrong=_get(data, "wrong", int),
        duration_s=float(_get(data, "duration_s", (int, float))),
    )


def result_json_in(output: str) -> str | None:
    """The JSON of the last ``NODEPROV_RESULT`` line in the job's stdout, if any."""
    lines = [line for line in output.splitlines() if line.startswith(RESULT_PREFIX)]
    return lines[-1][len(RESULT_PREFIX):] if lines else None


def table_rows(result: JobResult) -> list[tuple[str, ...]]:
    """One row of strings per message size, in TABLE_HEADER's order."""
    return [
        (human_bytes(row.bytes), str(row.count), str(row.iters), f"{row.time_us:.1f}",
         f"{row.algbw_gbps:.3f}", f"{row.busbw_gbps:.3f}", str(row.wrong))
        for row in result.sizes
    ]


def peak(result: JobResult) -> SizeResult | None:
    """The size with the highest bus bandwidth, None for an empty sweep."""
    return max(result.sizes, key=lambda row: row.busbw_gbps, default=None)


def size_json(row: SizeResult) -> dict[str, Any]:
    """A table row as numbers in base units: bytes, seconds, bytes per second."""
    return {"bytes": row.bytes, "elements": row.count, "iters": row.iters,
            "time_s": row.time_us / 1e6, "algbw_bytes_per_s": row.algbw_gbps * 1e9,
            "busbw_bytes_per_s": row.busbw_gbps * 1e9, "wrong": row.wrong}


def versions(result: JobResult) -> dict[str, str | None]:
    """What the job ran with on the node that wrote ``result``."""
    return {"torch": result.torch, "cuda": result.cuda, "nccl": result.nccl}


def result_json(result: JobResult) -> dict[str, Any]:
    """The job's result as data for the JSON report (docs/json-report.md)."""
    top = peak(result)
    return {
        "ok": result.ok, "backend": result.backend, "world_size": result.world_size,
        "nnodes": result.nnodes, "hostnames": list(result.hostnames), **versions(result),
        "ddp": {"ok": result.ddp_ok, "max_abs_diff": result.ddp_max_abs_diff},
        "warmup": result.warmup, "iters": result.iters, "wrong": result.wrong,
        "duration_s": result.duration_s, "sizes": [size_json(row) for row in result.sizes],
        "peak": {"bytes": top.bytes, "busbw_bytes_per_s": top.busbw_gbps * 1e9} if top else None,
    }


def verdict(result: JobResult) -> str:
    """One line: PASS or FAIL, what ran, and what failed or the peak bus bandwidth."""
    backend = f"nccl {result.nccl}" if result.nccl else result.backend
    scope = f"{counted(result.nnodes, 'node')}, {counted(result.world_size, 'rank')} ({backend})"
    problems = []
    if not result.ddp_ok:
        problems.append(f"DDP replicas differ by up to {result.ddp_max_abs_diff:.3g}")
    if result.wrong:
        at = ", ".join(human_bytes(row.bytes) for row in result.sizes if row.wrong)
        problems.append(f"{result.wrong} wrong all-reduce results at {at}")
    if problems or not result.ok:
        return f"FAIL: {scope}: " + "; ".join(problems or ["the job reported a failed check"])
    top = peak(result)
    if top is None:
        return f"PASS: {scope}: DDP replicas in sync"
    if result.world_size < 2:  # nothing crosses a bus: nccl-tests' busbw is 0 for one rank
        return (f"PASS: {scope}: DDP replicas in sync, every all-reduce result right; one rank "
                "sends nothing, so no bus bandwidth to measure")
    return (f"PASS: {scope}: DDP replicas in sync, every all-reduce result right; "
            f"peak busbw {top.busbw_gbps:.2f} GB/s at {human_bytes(top.bytes)}")
