"""Stand-ins for a GPU node's driver on a machine without one: an ``nvidia-smi`` that replays a
recorded output (tests/data/nvidia-smi), and a ``libcuda.so.1`` whose answers the environment
sets (``STUB_CUINIT``, ``STUB_COUNT``, ``STUB_MAJOR``, ``STUB_MINOR``), built with the C compiler
when there is one::

    bin_dir = fake_nvidia_smi("driver-470-cuda114-8xv100", tmp_path / "bin")
    lib_dir = stub_libcuda(tmp_path / "lib")      # skips the test without a C compiler
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

DATA = Path(__file__).parents[1] / "data" / "nvidia-smi"
_PROMPT = re.compile(r"^\$ nvidia-smi(?: (.*))?\n", re.MULTILINE)
_LIBCUDA = r"""
#include <stdlib.h>
static int env(const char *name, int fallback) {
  const char *value = getenv(name);
  return value ? atoi(value) : fallback;
}
int cuInit(unsigned int flags) { return env("STUB_CUINIT", 0); }
int cuDeviceGetCount(int *count) { *count = env("STUB_COUNT", 1); return 0; }
int cuDeviceGet(int *device, int ordinal) { *device = ordinal; return 0; }
int cuDeviceGetAttribute(int *value, int attribute, int device) {
  if (attribute == 75) { *value = env("STUB_MAJOR", 7); return 0; }
  if (attribute == 76) { *value = env("STUB_MINOR", 0); return 0; }
  return 1;
}
"""


def recorded_commands(name: str) -> dict[str, str]:
    """A record's commands (arguments after ``nvidia-smi``) and what each printed."""
    text = (DATA / f"{name}.txt").read_text()
    body = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("# "))
    parts = _PROMPT.split(body)[1:]
    return {arguments or "": output for arguments, output in zip(parts[::2], parts[1::2],
                                                                strict=True)}


def fake_nvidia_smi(name: str, folder: Path) -> Path:
    """A folder holding an ``nvidia-smi`` that answers the record's commands (``-L`` from its
    query rows), and exits 2 on any other."""
    commands = recorded_commands(name)
    query = commands[[key for key in commands if key.startswith("--query-gpu=")][-1]]
    rows = [line.split(", ") for line in query.splitlines() if line.strip()]
    commands["-L"] = "".join(f"GPU {row[0]}: {row[1]} (UUID: {row[2]})\n" for row in rows)
    cases = "".join(f"  {shlex.quote(arguments)}) printf '%s' {shlex.quote(output)} ;;\n"
                    for arguments, output in commands.items())
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "nvidia-smi"
    script.write_text(f'#!/bin/sh\ncase "$*" in\n{cases}  *) echo "not recorded: $*" >&2; '
                      "exit 2 ;;\nesac\n")
    script.chmod(0o755)
    return folder


def stub_libcuda(folder: Path) -> Path:
    """A folder holding a ``libcuda.so.1`` that answers as the environment says."""
    compiler = shutil.which("cc") or shutil.which("gcc")
    if compiler is None:
        pytest.skip("no C compiler to build the stand-in libcuda.so.1")
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "libcuda.c").write_text(_LIBCUDA)
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(folder / "libcuda.so.1"),
                    str(folder / "libcuda.c")], check=True, timeout=120)
    return folder
