"""An admin machine without internet whose folder mirror holds no uv: every download this
machine makes asks the inventory's sources only, uv cannot be had, and the nodes get their venv
and torch with pip instead, each step saying why; nothing fails. (With uv in the mirror:
tests/test_as_installed.py.)"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import yaml

from nodeprov.wheels import installer
from tests.conftest import MakeTestbed
from tests.wheels.offline import admin_without_internet

NODEPROV = str(Path(sys.executable).with_name("nodeprov"))
# the nodes read the same folder mirror (this machine's /opt, shared with the test cluster)
MIRROR = {"pip_index_url": "file:///opt/pypi/simple", "pip_find_links": ["/opt/wheels"],
          "venv_path": "/opt/nodeprov-offline/venv"}


@pytest.mark.integration
def test_without_uv_in_the_mirror_pip_installs_and_every_plan_says_why(
        make_testbed: MakeTestbed, tmp_path: Path) -> None:
    bed = make_testbed(nodes=1)
    inventory = yaml.safe_load(bed.inventory_path.read_text())
    inventory["all"]["vars"].update(MIRROR)
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump(inventory))
    args = [NODEPROV, "apply", str(path), "--tags", "venv"]
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "COLUMNS": "400"}
    with admin_without_internet(bed) as run:
        first = run(args, env=env)
        out = first.stdout
        assert first.returncode == 0, out + first.stderr
        assert "2 tasks changed, 0 hosts failed" in out, out
        why = (f"uv {installer.UV_VERSION} could not be had, so pip installs here: this machine "
               f"could not download uv=={installer.UV_VERSION} from /opt/wheels, "
               "file:///opt/pypi/simple: No matching distribution found for "
               f"uv=={installer.UV_VERSION}")
        assert f"node1 | Python venv | warning: {why}" in out, out
        # the torch task planned after that, in the same run: its plan line says why
        assert (f"with pip (uv {installer.UV_VERSION} could not be had: this machine could not "
                "download it from /opt/wheels, file:///opt/pypi/simple: No matching "
                "distribution found") in out, out
        assert len(list((tmp_path / "cache").rglob(".fetch.log"))) == 1  # asked once
        again = run(args, env=env)
        assert again.returncode == 0 and "0 tasks changed, 0 hosts failed" in again.stdout
    shown = bed.exec("node1", "/opt/nodeprov-offline/venv/bin/python", "-c",
                     "import numpy, torch; print(torch.__version__)")
    assert shown.stdout == "2.13.0+cpu\n", shown.stderr
    assert bed.exec("node1", "test", "-e", installer.UV).returncode == 1  # no uv
    assert bed.exec("node1", "test", "-e", installer.UV_FAILED).returncode == 1  # nor blamed
