"""What ``nodeprov run``'s integration tests share: the command as a user types it, and what of
a job is left on a node, seen from inside it (the testbed's nsenter, not nodeprov's SSH)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from nodeprov.job.nodejob import JOB_DIR
from nodeprov.testbed.cluster import Testbed
from tests.report_schema import assert_valid

SCRIPT = Path(__file__).parent / "ddp" / "train.py"
NODEPROV = str(Path(sys.executable).with_name("nodeprov"))
RDZV_PORT = 29500


def leftovers(bed: Testbed, runs: str = JOB_DIR) -> dict[str, str]:
    """What of a job is still on a node: processes of the job, a listener on the rendezvous
    port, the job lock held (its abstract socket), a run's folder under ``runs``."""
    found = {}
    for name in bed.nodes:
        procs = bed.exec(name, "pgrep", "-af", "torchrun|train.py").stdout.strip()
        port = bed.exec(name, "ss", "-Htln", f"sport = :{RDZV_PORT}").stdout.strip()
        lock = "@nodeprov-job" in bed.exec(name, "ss", "-Hxl").stdout
        left = bed.exec(name, "sh", "-c", f"ls {runs} 2>/dev/null | grep nodeprov-run"
                        ).stdout.strip()
        if procs or port or lock or left:
            found[name] = f"procs={procs!r} port={port!r} lock_held={lock} runs={left!r}"
    return found


def run_argv(bed: Testbed, code: Path, *script_args: str, options: tuple[str, ...] = (),
             inventory: Path | None = None, script: str = "train.py") -> list[str]:
    return [NODEPROV, "run", str(inventory or bed.inventory_path), "--sync", str(code),
            "--json", "-", *options, "--", script, *script_args]


def nodeprov_run(bed: Testbed, code: Path, *script_args: str, options: tuple[str, ...] = (),
                 timeout: float = 300, inventory: Path | None = None, script: str = "train.py"
                 ) -> tuple[int, dict[str, Any], str]:
    done = subprocess.run(run_argv(bed, code, *script_args, options=options,
                                   inventory=inventory, script=script),
                          capture_output=True, text=True, timeout=timeout, check=False)
    report = json.loads(done.stdout) if done.stdout.strip() else {}
    if report:
        assert_valid(report)
    return done.returncode, report, done.stderr
