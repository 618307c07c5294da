"""Bandwidth baseline: record the sweep's bus bandwidth once, flag a drop in later runs.

    path = baseline_path(inventory.path)                # cluster.nodeprov-baseline.json
    record_baseline(path, outcome.result)               # after a run that passed
    problem = compare_to_baseline(path, outcome.result, drop=0.3)
    print(problem)                                      # busbw at 64 MiB fell to 6.1 GB/s ...

The comparison uses the largest message size both runs measured: small messages measure
latency, the largest one the links.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from nodeprov.errors import InputError
from nodeprov.proof.results import JobResult
from nodeprov.util.units import human_bytes

BASELINE_SUFFIX = ".nodeprov-baseline.json"


@dataclass(frozen=True)
class Baseline:
    recorded: str
    backend: str
    nnodes: int
    world_size: int
    busbw_gbps: Mapping[int, float]  # by message size in bytes

    def shape(self) -> str:
        return _shape(self.nnodes, self.world_size, self.backend)

    def to_json(self, path: Path) -> dict[str, Any]:
        """For the JSON report: bytes and bytes per second."""
        return {"path": str(path), "recorded": self.recorded, "backend": self.backend,
                "nnodes": self.nnodes, "world_size": self.world_size,
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
    return f"{world_size} ranks on {nnodes} node{'s' if nnodes != 1 else ''} ({backend})"


def record_baseline(path: Path, result: JobResult) -> None:
    """Write the result's bus bandwidth per size to ``path`` (atomically); only a run that
    passed is a baseline."""
    if not result.ok:
        raise ValueError("a failed run is no baseline: fix the cluster, then record again")
    data = {
        "recorded": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "backend": result.backend, "nnodes": result.nnodes, "world_size": result.world_size,
        "hostnames": sorted(set(result.hostnames)), "torch": result.torch,
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
            busbw_gbps={int(row["bytes"]): float(row["busbw_gbps"]) for row in data["sizes"]})
    except (KeyError, TypeError, ValueError) as error:
        raise InputError(f"the bandwidth baseline lacks or garbles {error}; delete the file and "
                         "record a new one", source=str(path)) from None


def compare_to_baseline(path: Path, result: JobResult, drop: float) -> str | None:
    """One line when the busbw at the largest common size fell by more than ``drop`` (a
    fraction) below the baseline, or the baseline was recorded on another cluster shape;
    None when there is no baseline or the bandwidth held up."""
    baseline = load_baseline(path)
    if baseline is None:
        return None
    current = {row.bytes: row.busbw_gbps for row in result.sizes}
    common = sorted(set(current) & set(baseline.busbw_gbps))
    shape = _shape(result.nnodes, result.world_size, result.backend)
    if shape != baseline.shape() or not common:
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
