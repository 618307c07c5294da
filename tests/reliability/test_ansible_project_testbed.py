"""An Ansible project used as it is, on a testbed (issue #25): from the folder of its
ansible.cfg (inventory, remote_user, private_key_file, become, vault_password_file, ssh_args
with -F), with the sudo password in a vault-encrypted group_vars file, ``nodeprov apply``
needs no argument but the playbook; neither password shows anywhere; a wrong vault password
names the file and id; -K asks for the sudo password instead."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodeprov.tasks.textfiles import blocks
from nodeprov.testbed.cluster import Testbed
from tests.conftest import MakeTestbed
from tests.inventory.test_vault import made
from tests.reliability.helpers import NETWORK_PLAYBOOK
from tests.reliability.test_secrets import ADD_USER, PASSWORD

pytestmark = pytest.mark.integration
VAULT_PASSWORD = "Vault-Canary-9e21"  # noqa: S105 - the test's own canary


def project(bed: Testbed, folder: Path, *, vaulted: bool) -> Path:
    """The repository: ansible.cfg listing two inventory sources (inventory/hosts.yml and
    inventory/extra.yml, whose motd_line wins), the project's group_vars/all/vault.yml."""
    inventory = yaml.safe_load(bed.inventory_path.read_text())
    for name in ("ansible_user", "ansible_ssh_private_key_file", "ssh_config_file"):
        inventory["all"]["vars"].pop(name, None)
    inventory["all"]["vars"]["motd_line"] = "overridden by the second source"
    (folder / "inventory").mkdir(parents=True)
    (folder / "group_vars" / "all").mkdir(parents=True)
    (folder / "inventory" / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (folder / "inventory" / "extra.yml").write_text(
        f"all:\n  vars:\n    motd_line: set from {folder.name}\n")
    (folder / "playbook.yaml").write_text(NETWORK_PLAYBOOK)
    (folder / ".vault-pass").write_text(VAULT_PASSWORD + "\n")
    (folder / "ansible.cfg").write_text(
        "[defaults]\ninventory = inventory/hosts.yml,inventory/extra.yml\nremote_user = alice\n"
        f"private_key_file = {bed.layout.client_key}\nvault_password_file = .vault-pass\n"
        "forks = 2\ngathering = smart\n[privilege_escalation]\nbecome = True\n"
        "become_method = sudo\nbecome_user = root\n[ssh_connection]\n"
        f"ssh_args = -F {bed.ssh_config_path} -o ControlMaster=auto -o ControlPersist=60s\n"
        "pipelining = True\n")
    if vaulted:
        plain = folder / "plain.yml"
        plain.write_text(f"ansible_become_password: {PASSWORD}\n")
        made(["encrypt", "--vault-password-file", ".vault-pass", "--encrypt-vault-id",
              "default", "--output", "group_vars/all/vault.yml", str(plain)], folder)
        plain.unlink()
    return folder


def nodeprov(folder: Path, *args: str, stdin: str | None = None
             ) -> tuple[int, str, dict[str, Any]]:
    """``nodeprov apply -p playbook.yaml ARGS`` run in ``folder``, with no terminal (a
    password asked for is read from stdin)."""
    report = folder / "report.json"
    done = subprocess.run([sys.executable, "-m", "nodeprov", "apply", "-p", "playbook.yaml",
                           "--json", str(report), *args], cwd=folder, input=stdin,
                          capture_output=True, text=True, timeout=300, check=False,
                          start_new_session=True, env={**os.environ, "HOME": str(folder)})
    document = json.loads(report.read_text()) if report.exists() else {}
    return done.returncode, done.stdout + done.stderr, document


@pytest.mark.skipif(shutil.which("sudo") is None, reason="needs sudo on this machine (the "
                    "testbed's nodes share its /usr): apt-get install sudo")
def test_an_ansible_project_works_unchanged(make_testbed: MakeTestbed, tmp_path: Path) -> None:
    bed = make_testbed(nodes=2)
    for node in bed.nodes:
        bed.exec(node, "sh", "-c", ADD_USER, "add-user", PASSWORD, "", check=True)

    folder = project(bed, tmp_path / "vaulted", vaulted=True)
    code, output, report = nodeprov(folder)
    assert code == 0, output
    assert {host["status"] for host in report["hosts"].values()} == {"changed"}
    for node in bed.nodes:  # written as root, through sudo, as alice
        motd = bed.exec(node, "cat", "/etc/motd", check=True).stdout
        assert blocks.block_lines(motd, "notice") == ["set from vaulted"]
    shown = output + json.dumps(report)
    assert PASSWORD not in shown and VAULT_PASSWORD not in shown
    assert "not used by nodeprov" not in output  # gathering cannot change what nodeprov does
    assert "-o ControlMaster=auto -o ControlPersist=60s not applied" in output

    (folder / ".vault-pass").write_text("Wrong-Vault-1\n")
    code, output, _ = nodeprov(folder, "--check")
    assert code == 2, output
    assert "nodeprov: group_vars/all/vault.yml: vault id 'default': wrong password" in output

    asked = project(bed, tmp_path / "asked", vaulted=False)
    code, output, report = nodeprov(asked, "-K", stdin=PASSWORD + "\n")
    assert code == 0, output
    assert "BECOME password" in output and PASSWORD not in output + json.dumps(report)
