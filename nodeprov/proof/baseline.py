"""Bandwidth baseline: record the sweep's bus bandwidth once, flag a drop in later runs.

    path = baseline_path(inventory.path)                # cluster.nodeprov-baseline.json
    record_baseline(path, outcome.result, nodes=("node1", "node2"))  # a run that passed
    problem = compare_to_baseline(path, outcome.result, drop=0.3)
    print(problem)                                      # busbw at 64 MiB fell to 6.1 GB/s ...

The comparison uses the largest message size both runs measured: small messages measure
latency, the largest one the links. ``kept_or_recorded`` is apply's rule: the baseline is
kept, not followed; only a first run, another cluster shape or ``--rebaseline`` replaces it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from nodeprov.errors import InputError
from nodeprov.proof.results import JobResult
from nodeprov.util.units import counted, human_bytes

BASELINE_SUFFIX = ".nodeprov-baseline.json"
T = TypeVar("T")


@dataclass(frozen=True)
class Baseline:
    recorded: str
    backend: str
    nnodes: int
    world_size: int
    busbw_gbps: Mapping[int, float]  # by message size in bytes
    # what the run it records ran on; absent (empty, None) in baselines written before
    nodes: tuple[str, ...] = ()
    torch: str | None = None
    nccl: str | None = None
    link_bytes_per_s: float | None = None  # the slowest node's link into the node subnet

    def shape(self) -> str:
        return _shape(self.nnodes, self.world_size, self.backend)

    def to_json(self, path: Path) -> dict[str, Any]:
        """For the JSON report: bytes and bytes per second."""
        return {"path": str(path), "recorded": self.recorded, "backend": self.backend,
                "nnodes": self.nnodes, "world_size": self.world_size,
                "nodes": list(self.nodes), "torch": self.torch, "nccl": self.nccl,
                "link_bytes_per_s": self.link_bytes_per_s,
                "sizes": [{"bytes": size, "busbw_bytes_per_s": busbw * 1e9}
                          for size, busbw in sorted(self.busbw_gbps.items())]}


def baseline_path(inventory_path: Path) -> Path:
    """Beside the inventory: ``cluster.yaml`` -> ``cluster.nodeprov-baseline.json``."""
    return inventory_path.with_name(inventory_path.stem + BASELINE_SUFFIX)


def _shape(nnodes: int, world_size: int, backend: str) -> str:
    """
    >>> _shape(1, 2, "gloo")
    '2 ranks on 1 node (gloo)'
    """
    return f"{world_size} ranks on {counted(nnodes, 'node')} ({backend})"


def record_baseline(path: Path, result: JobResult, *, nodes: Sequence[str],
                    link_bytes_per_s: float | None = None) -> None:
    """Write the result's bus bandwidth per size to ``path`` (atomically), with when, on which
    ``nodes`` (inventory names), torch, NCCL and the slowest link; only a passing run is a
    baseline."""
    if not result.ok:
        raise ValueError("a failed run is no baseline: fix the cluster, then record again")
    data = {
        "recorded": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "backend": result.backend, "nnodes": result.nnodes, "world_size": result.world_size,
        "nodes": list(nodes), "hostnames": sorted(set(result.hostnames)),
        "torch": result.torch, "nccl": result.nccl, "link_bytes_per_s": link_bytes_per_s,
        "sizes": [{"bytes": row.bytes, "busbw_gbps": row.busbw_gbps} for row in result.sizes],
    }
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    partial.replace(path)


def load_baseline(path: Path) -> Baseline | None:
    """The baseline at ``path``, None when there is none; InputError when it is unreadable."""
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise InputError(f"cannot read the bandwidth baseline: {error}; delete the file and "
                         "record a new one", source=str(path)) from None
    try:
        return Baseline(
            recorded=str(data["recorded"]), backend=str(data["backend"]),
            nnodes=int(data["nnodes"]), world_size=int(data["world_size"]),
            busbw_gbps={int(row["bytes"]): float(row["busbw_gbps"]) for row in data["sizes"]},
            nodes=tuple(str(name) for name in data.get("nodes", ())),
            torch=_optional(data.get("torch"), str), nccl=_optional(data.get("nccl"), str),
            link_bytes_per_s=_optional(data.get("link_bytes_per_s"), float))
    except (KeyError, TypeError, ValueError) as error:
        raise InputError(f"the bandwidth baseline lacks or garbles {error}; delete the file and "
                         "record a new one", source=str(path)) from None


def _optional(value: Any, kind: Callable[[Any], T]) -> T | None:
    return None if value is None else kind(value)


def compare_to_baseline(path: Path, result: JobResult, drop: float) -> str | None:
    """One line when the busbw at the largest common size fell by more than ``drop`` (a
    fraction) below the baseline, or the baseline was recorded on another cluster shape;
    None when there is no baseline or the bandwidth held up."""
    baseline = load_baseline(path)
    return None if baseline is None else _compare(baseline, path, result, drop)


def kept_or_recorded(path: Path, result: JobResult, *, drop: float, rebaseline: bool,
                     nodes: Sequence[str], link_bytes_per_s: float | None = None) -> tuple[
                         Baseline | None, str | None, str | None]:
    """apply's rule for a passing run: the stored baseline, a note when this run was recorded
    as the baseline (none yet, another cluster shape, or ``rebaseline``), and the drop's line
    when this run fell below a baseline that is kept."""
    stored = load_baseline(path)
    if stored is not None and not rebaseline and _same_shape(stored, result):
        problem = _compare(stored, path, result, drop)
        return stored, None, problem and (
            f"{problem}; the baseline is kept: `nodeprov apply --rebaseline` records this run "
            "instead, once the slower bandwidth is expected")
    record_baseline(path, result, nodes=nodes, link_bytes_per_s=link_bytes_per_s)
    why = ("as asked (--rebaseline)" if rebaseline and stored is not None else
           "(the first)" if stored is None else f"(the old one was {stored.shape()})")
    return load_baseline(path), f"bandwidth baseline recorded in {path.name} {why}", None


def _same_shape(baseline: Baseline, result: JobResult) -> bool:
    shape = _shape(result.nnodes, result.world_size, result.backend)
    return shape == baseline.shape()


def _compare(baseline: Baseline, path: Path, result: JobResult, drop: float) -> str | None:
    current = {row.bytes: row.busbw_gbps for row in result.sizes}
    common = sorted(set(current) & set(baseline.busbw_gbps))
    shape = _shape(result.nnodes, result.world_size, result.backend)
    if not _same_shape(baseline, result) or not common:
        return (f"bandwidth baseline {path.name} was recorded on {baseline.shape()} up to "
                f"{human_bytes(max(baseline.busbw_gbps, default=0))}; this run is "
                f"{shape} up to {human_bytes(max(current, default=0))}: "
                "record a new baseline to compare")
    size = common[-1]
    now, before = current[size], baseline.busbw_gbps[size]
    if now >= before * (1 - drop):
        return None
    fell = 1 - now / before if before else 0.0
    return (f"busbw at {human_bytes(size)} fell to {now:.2f} GB/s from {before:.2f} GB/s in the "
            f"baseline of {baseline.recorded} (-{fell:.0%}, more than the allowed {drop:.0%}): a "
            "slower link, a changed NCCL setting or a busy node; `nodeprov verify --pairwise` "
            "finds the slow link")
