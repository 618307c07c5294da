"""Prove the cluster can train: the connectivity matrix, then the torchrun job, then the
bandwidth baseline. ``apply`` ends with it and records the baseline; ``verify`` compares.

    proof = prove_cluster(hosts, sessions, facts, params, baseline=path, record=True)
    print_proof(console, proof)          # matrix problems, the sweep table, one verdict line

The matrix runs first: a blocked port or a missing /etc/hosts line is named per node pair in
seconds, where the job would spend its timeout to say less. A broken matrix skips the job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from rich.console import Console
from rich.table import Table

from nodeprov import validate
from nodeprov.facts import Facts
from nodeprov.inventory import Host
from nodeprov.job.baseline import compare_to_baseline, record_baseline
from nodeprov.job.connectivity import Matrix, check_connectivity
from nodeprov.job.launch import JobOutcome, run_job
from nodeprov.job.results import TABLE_HEADER, table_rows
from nodeprov.session import Session


@dataclass(frozen=True)
class JobParams:
    """The ``job:`` of a play (site.yaml fills each from the inventory's job_* vars)."""

    venv_path: str = "/opt/nodeprov/venv"
    rdzv_port: int = 29500
    backend: Literal["auto", "nccl", "gloo"] = "auto"
    timeout: int = 120
    max_bytes: int = 64 * 1024 * 1024
    bandwidth_drop: float = 0.3

    def __post_init__(self) -> None:
        validate.absolute_path(self.venv_path)
        validate.port(self.rdzv_port)
        if self.timeout < 10:
            raise ValueError(f"timeout {self.timeout} is too short; give at least 10 seconds")
        if not 8 <= self.max_bytes <= 1 << 34:
            raise ValueError(f"max_bytes {self.max_bytes} must be from 8 to 16 GiB")
        if not 0 < self.bandwidth_drop < 1:
            raise ValueError(f"bandwidth_drop {self.bandwidth_drop} must be between 0 and 1")


@dataclass(frozen=True)
class Proof:
    matrix: Matrix
    outcome: JobOutcome | None
    bandwidth_problem: str | None = None

    @property
    def ok(self) -> bool:
        return (self.matrix.ok and self.outcome is not None and self.outcome.ok
                and self.bandwidth_problem is None)

    def failures(self) -> list[str]:
        lines = self.matrix.problems()
        if self.outcome is not None:
            lines += self.outcome.failures
        return lines + ([self.bandwidth_problem] if self.bandwidth_problem else [])

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "connectivity": {"ok": self.matrix.ok, "rows": self.matrix.rows(),
                             "problems": self.matrix.problems(),
                             "duration_s": round(self.matrix.duration_s, 3)},
            "job": self.outcome.to_json() if self.outcome else None,
            "sizes": [dict(zip(TABLE_HEADER, row, strict=True))
                      for row in (table_rows(self.outcome.result)
                                  if self.outcome and self.outcome.result else [])],
            "bandwidth_problem": self.bandwidth_problem,
        }


def prove_cluster(hosts: Sequence[Host], sessions: Mapping[str, Session],
                  facts: Mapping[str, Facts], params: JobParams, *, baseline: Path,
                  record: bool) -> Proof:
    """Matrix, then the job when the matrix is clean; ``record`` writes the baseline after a
    passing job (apply), otherwise the result is compared with it (verify)."""
    matrix = check_connectivity(hosts, sessions, facts, params.rdzv_port)
    if not matrix.ok:
        return Proof(matrix, None)
    outcome = run_job(hosts, sessions, facts, backend=params.backend,
                      venv_path=params.venv_path, rdzv_port=params.rdzv_port,
                      timeout=params.timeout, max_bytes=params.max_bytes)
    if outcome.result is None or not outcome.ok:
        return Proof(matrix, outcome)
    if record:
        record_baseline(baseline, outcome.result)
        return Proof(matrix, outcome)
    return Proof(matrix, outcome,
                 compare_to_baseline(baseline, outcome.result, params.bandwidth_drop))


def print_proof(console: Console, proof: Proof) -> None:
    if not proof.matrix.ok:
        console.print(proof.matrix.table())
    if proof.outcome is not None and proof.outcome.result is not None:
        table = Table(title="all-reduce sweep (busbw as nccl-tests defines it)",
                      title_justify="left")
        for column in TABLE_HEADER:
            table.add_column(column, justify="right")
        for row in table_rows(proof.outcome.result):
            table.add_row(*row)
        console.print(table)
    for line in proof.failures():
        console.print(f"FAILED {line}", style="bold red", markup=False, highlight=False)
    if proof.outcome is not None:
        console.print(proof.outcome.verdict, style="green" if proof.ok else "bold red",
                      markup=False, highlight=False)
    else:
        console.print("FAIL: the connectivity matrix is broken; the job did not run",
                      style="bold red", markup=False, highlight=False)
