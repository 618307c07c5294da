"""nodeprov as a user installs it, where users run it: the wheel built from this tree, installed
into a fresh venv with no extras and no torch (README's Install; the Dockerfile does the same),
run on an admin machine without internet (a network namespace that reaches only the test
cluster's bridge), the site's mirror a folder (a file:// simple index plus find-links, uv's
wheel in it) and the nodes seeing no index at all: apply with the job, verify, run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import MakeTestbed
from tests.wheels.mirror import uv_index
from tests.wheels.offline import admin_without_internet

ROOT = Path(__file__).parents[1]
SCRIPT = Path(__file__).parent / "userjob" / "ddp" / "train.py"
MIRRORS = ("/opt/wheels", "/opt/pypi", "/opt/pypi-more")


def installed_as_users_do(folder: Path) -> Path:
    """The wheel of this tree in a fresh venv, no extras: its ``nodeprov`` program."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w",
                    str(folder / "dist"), str(ROOT)], check=True, capture_output=True)
    (wheel,) = (folder / "dist").glob("nodeprov-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(folder / "user")], check=True)
    python = folder / "user" / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], check=True,
                   capture_output=True)
    assert subprocess.run([str(python), "-c", "import torch"], capture_output=True
                          ).returncode == 1  # no torch on the admin machine
    return folder / "user" / "bin" / "nodeprov"


@pytest.mark.integration
def test_apply_verify_and_run_from_a_plain_install_on_an_admin_without_internet(
        make_testbed: MakeTestbed, tmp_path: Path) -> None:
    started = time.monotonic()
    nodeprov = installed_as_users_do(tmp_path)
    bed = make_testbed(nodes=2)
    for node in bed.nodes:  # the nodes see no index: everything comes through this machine
        for mirror in MIRRORS:
            assert bed.exec(node, "mount", "-t", "tmpfs", "none", mirror).returncode == 0
    inventory = yaml.safe_load(bed.inventory_path.read_text())
    inventory["all"]["vars"].update({
        "pip_index_url": "file:///opt/pypi/simple", "pip_find_links": ["/opt/wheels"],
        "pip_extra_index_url": [uv_index()], "wheelhouse": True,
        "job_max_bytes": 1 << 20, "job_timeout": 240, "bandwidth_drop": 0.9})
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump(inventory))
    code = tmp_path / "train"
    code.mkdir()
    shutil.copy(SCRIPT, code / "train.py")
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    with admin_without_internet(bed) as run:
        applied = run([str(nodeprov), "apply", str(path), "--json", str(tmp_path / "a.json")],
                      env=env)
        out = " ".join(applied.stdout.split())
        assert applied.returncode == 0, applied.stdout + applied.stderr
        last = applied.stdout.splitlines()[-1]  # the verdict: the hosts, then the job's
        assert "Traceback" not in applied.stderr and last.startswith("PASS: "), out
        assert "; job: 2 nodes, 2 ranks (gloo)" in last, last
        # uv like the wheels: from this machine once, then from a node over the subnet
        assert out.count("pip put in by uv (uv 0.13.9 uploaded from this machine)") == 1, out
        assert out.count("pip put in by uv (uv 0.13.9 from node") == 1, out
        assert out.count(", uploaded from this machine) with uv 0.13.9") == 1, out
        assert "could not be had" not in out and "after all" not in out, out
        report = json.loads((tmp_path / "a.json").read_text())
        assert report["ok"] and report["proofs"][0]["job"]["ok"]
        verified = run([str(nodeprov), "verify", str(path)], env=env)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        ran = run([str(nodeprov), "run", str(path), "--sync", str(code), "--json", "-", "--",
                   "train.py", "--steps", "3"], env=env)
        assert ran.returncode == 0, ran.stdout + ran.stderr
    result = json.loads(ran.stdout)
    assert result["ok"] and result["verdict"].startswith("PASS: 2 nodes, 2 ranks")
    logs = "".join(Path(node["log"]).read_text() for node in result["nodes"].values())
    assert "done, world size 2" in logs and "NumPy" not in logs  # numpy is in the venv
    for node in bed.nodes:
        numpy = bed.exec(node, "/opt/nodeprov/venv/bin/python", "-c", "import numpy")
        assert numpy.returncode == 0, numpy.stderr
    print(f"\nas installed, admin without internet, 2 nodes: build, install, apply, verify, "
          f"run in {time.monotonic() - started:.0f} s")
