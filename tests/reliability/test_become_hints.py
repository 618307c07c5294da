"""A sudo password given with -e appears in no printed command (issue #23): verify's repair
commands (one per drift, in its output and JSON report) and apply's re-run hint said it as
given; they say -K now."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import MakeTestbed
from tests.reliability.helpers import NETWORK_PLAYBOOK, apply, apply_args
from tests.reliability.test_secrets import ADD_USER, PASSWORD, WRONG

pytestmark = pytest.mark.integration


@pytest.mark.skipif(shutil.which("sudo") is None, reason="needs sudo on this machine (the "
                    "testbed's nodes share its /usr): apt-get install sudo")
def test_a_password_given_with_e_is_in_no_repair_or_rerun_command(make_testbed: MakeTestbed,
                                                                  tmp_path: Path) -> None:
    bed = make_testbed(nodes=1)
    bed.exec("node1", "sh", "-c", ADD_USER, "add-user", PASSWORD, "", check=True)
    args = apply_args(bed, tmp_path, NETWORK_PLAYBOOK, ansible_user="alice", ansible_become=True)
    report = tmp_path / "verify.json"
    done = subprocess.run([sys.executable, "-m", "nodeprov", "verify", *args, "--no-job",
                           "-e", f"ansible_become_password={PASSWORD}", "--json", str(report)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 1, done.stdout + done.stderr  # nothing applied yet: drift
    repairs = [check["repair"] for check in json.loads(report.read_text())["checks"]
               if check["repair"]]
    assert repairs and all(" -K" in repair for repair in repairs), repairs
    assert PASSWORD not in done.stdout + done.stderr + report.read_text()

    refused = apply(*args, "-e", f"ansible_become_password={WRONG}")
    assert refused.code == 1 and "sudo refused the password" in refused.output
    assert "re-run only those: nodeprov apply" in refused.output and " -K " in refused.output
    assert WRONG not in refused.stdout + refused.stderr + json.dumps(refused.report)
