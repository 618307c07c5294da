"""ansible-core as the oracle: run its own commands on an inventory, in a clean folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

ANSIBLE_BIN = Path(sys.executable).parent


def ansible(tool: str, args: list[str], cwd: Path,
            environ: Mapping[str, str] | None = None) -> str:
    """stdout of ``tool`` (ansible-inventory, ansible) run on ``args`` (``environ``: added to
    the environment); skips the test when ansible-core (the test extra) is not installed."""
    program = ANSIBLE_BIN / tool
    if not program.exists() and shutil.which(tool) is None:
        pytest.skip("ansible-core is not installed (pip install -e '.[test]')")
    env = {**os.environ, "ANSIBLE_HOME": str(cwd / ".ansible"), "ANSIBLE_NOCOLOR": "1",
           "ANSIBLE_INVENTORY_UNPARSED_FAILED": "1", "ANSIBLE_LOCAL_TEMP": str(cwd / ".tmp"),
           "ANSIBLE_DEPRECATION_WARNINGS": "0", **(environ or {})}
    done = subprocess.run([str(program if program.exists() else tool), *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise AssertionError(f"{tool} {' '.join(args)} failed: {done.stderr[-2000:]}")
    return done.stdout


def ansible_list(source: Path, cwd: Path) -> dict[str, Any]:
    result: dict[str, Any] = json.loads(ansible("ansible-inventory",
                                                ["-i", str(source), "--list"], cwd))
    return result


def list_hosts(source: Path, pattern: str, cwd: Path, limit: str | None = None) -> list[str]:
    """The hosts ``ansible PATTERN --list-hosts`` selects."""
    args = ["-i", str(source), pattern, "--list-hosts", *(["--limit", limit] if limit else [])]
    lines = ansible("ansible", args, cwd).splitlines()
    return [line.strip() for line in lines[1:] if line.strip()]


def templated(source: Path, host: str, var: str, cwd: Path) -> Any:
    """``var`` of ``host`` as Ansible templates it (``ansible HOST -m debug``; connects to
    nothing: debug runs on the controller)."""
    output = ansible("ansible", ["-i", str(source), host, "-m", "debug", "-a", f"var={var}"], cwd)
    return json.loads(output.split("=>", 1)[1])[var]
