"""``ansible-config dump --only-changed -t all`` as the oracle for ansible.cfg and ANSIBLE_*:
run from a folder with an environment of its own (no ANSIBLE_* of this process leaks in)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from tests.inventory.oracle import ANSIBLE_BIN

# Ansible's name ("ssh:NAME", "sudo:NAME" for the plugins') -> (value, origin)
Dumped = dict[str, tuple[Any, str]]


def ansible_config_dump(cwd: Path, env: Mapping[str, str]) -> Dumped | str:
    """What Ansible resolves, by name (plugin settings as ``ssh:NAME``/``sudo:NAME``, the file
    as ``CONFIG_FILE``); the error text when ansible-config refuses the configuration."""
    program = ANSIBLE_BIN / "ansible-config"
    if not program.exists():
        pytest.skip("ansible-core is not installed (pip install -e '.[test]')")
    full = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")} | dict(env)
    done = subprocess.run([str(program), "dump", "--only-changed", "-t", "all", "-f", "json"],
                          cwd=cwd, env=full, capture_output=True, text=True, timeout=300,
                          check=False)
    if done.returncode != 0:
        return done.stderr.strip() or f"exit {done.returncode}"
    dumped: Dumped = {}
    for item in json.loads(done.stdout):
        if "name" in item:
            dumped[item["name"]] = (item["value"], item["origin"])
            continue
        for kind, plugins in item.items():
            for plugin in plugins if kind in ("CONNECTION_PLUGINS", "BECOME_PLUGINS") else []:
                for name, options in plugin.items():
                    for option in options:
                        dumped[f"{name}:{option['name']}"] = (option["value"],
                                                              option["origin"])
    return dumped
