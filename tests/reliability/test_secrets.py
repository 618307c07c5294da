"""Security defaults (issue #8): the sudo password works and is never shown; apply refuses
unknown and changed host keys before changing anything.

Elsewhere: ``facts`` and host keys in tests/commands/test_apply_and_facts.py
(test_host_keys_refused_then_accepted_then_changed_refused); the exact ufw rule set and the
outsider kept off the data ports in tests/tasks/firewall/test_firewall.py
(test_firewall_on_the_shared_testbed).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from nodeprov.tasks.textfiles import blocks
from nodeprov.testbed.cluster import Testbed
from tests.conftest import MakeTestbed
from tests.reliability.helpers import NETWORK_PLAYBOOK, Applied, apply, apply_args

pytestmark = pytest.mark.integration

PASSWORD = "Correct-Horse-7f3a9"  # noqa: S105 - the test's own canary
WRONG = "Wrong-Pony-2b8e1"
ADD_USER = """useradd -m -s /bin/sh alice
echo "alice:$1" | chpasswd
echo "alice ALL=(ALL:ALL) $2ALL" > /etc/sudoers.d/alice && chmod 440 /etc/sudoers.d/alice
install -d -o alice -g alice -m 700 /home/alice/.ssh
install -o alice -g alice -m 600 /root/.ssh/authorized_keys /home/alice/.ssh/
"""


def everything_shown(applied: Applied) -> str:
    return applied.stdout + applied.stderr + repr(applied.report)


def as_alice(bed: Testbed, folder: Path, password: str) -> list[str]:
    return apply_args(bed, folder, NETWORK_PLAYBOOK, ansible_user="alice", ansible_become=True,
                      ansible_become_password=password, motd_line=f"set by {folder.name}")


@pytest.mark.skipif(shutil.which("sudo") is None, reason="needs sudo on this machine (the "
                    "testbed's nodes share its /usr): apt-get install sudo")
def test_the_sudo_password_works_and_is_never_shown(make_testbed: MakeTestbed,
                                                   tmp_path: Path) -> None:
    bed = make_testbed(nodes=2)
    for node in bed.nodes:
        bed.exec(node, "sh", "-c", ADD_USER, "add-user", PASSWORD, "", check=True)

    applied = apply(*as_alice(bed, tmp_path / "right", PASSWORD), "--diff", "--verbose")
    assert applied.code == 0, applied.output
    assert set(applied.statuses().values()) == {"changed"}
    for node in bed.nodes:  # root's files, written through sudo, firewall and lock included
        motd = bed.exec(node, "cat", "/etc/motd", check=True).stdout
        assert blocks.block_lines(motd, "notice") == ["set by right"]
        assert "Status: active" in bed.exec(node, "ufw", "status").stdout
    assert PASSWORD not in everything_shown(applied)

    refused = apply(*as_alice(bed, tmp_path / "wrong", WRONG), "--check")
    assert refused.code == 1, refused.output
    assert "sudo refused the password (facts)" in refused.output
    assert WRONG not in everything_shown(refused)

    # a sudo that asks for no password: the password given anyway is not shown either
    for node in bed.nodes:
        bed.exec(node, "sh", "-c", ADD_USER.splitlines()[2], "sudoers", "", "NOPASSWD: ",
                 check=True)
    again = apply(*as_alice(bed, tmp_path / "nopasswd", PASSWORD), "--diff", "--verbose")
    assert again.code == 0 and set(again.statuses().values()) == {"changed"}, again.output
    assert PASSWORD not in everything_shown(again)


def test_apply_refuses_unknown_and_changed_host_keys_before_changing_anything(
        make_testbed: MakeTestbed, tmp_path: Path) -> None:
    bed = make_testbed(nodes=1)
    known = tmp_path / "known_hosts"
    config = tmp_path / "ssh_config"
    config.write_text(f"Host *\n  UserKnownHostsFile {known}\n")
    args = apply_args(bed, tmp_path, NETWORK_PLAYBOOK, ssh_config_file=str(config))
    # the testbed's inventory names its own ssh_config: point it at an empty known_hosts
    inventory = yaml.safe_load(Path(args[0]).read_text())
    inventory["all"]["vars"]["ssh_config_file"] = str(config)
    Path(args[0]).write_text(yaml.safe_dump(inventory))
    before = bed.exec("node1", "cat", "/etc/motd", check=True).stdout

    unknown = apply(*args)
    assert unknown.code == 1 and "unknown host key for" in unknown.output
    assert "--accept-new-host-keys" in unknown.output and not known.exists()
    assert bed.exec("node1", "cat", "/etc/motd", check=True).stdout == before

    known.write_text(f"{bed.address('node1')} ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0S"
                     "dG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n")
    changed = apply(*args, "--accept-new-host-keys")
    assert changed.code == 1 and "CHANGED" in changed.output, changed.output
    assert bed.exec("node1", "cat", "/etc/motd", check=True).stdout == before

    known.unlink()
    accepted = apply(*args, "--accept-new-host-keys")
    assert accepted.code == 0, accepted.output
    assert bed.address("node1") in known.read_text()
