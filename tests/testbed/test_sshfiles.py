import os
import shutil
import subprocess
from pathlib import Path

import paramiko
import pytest

from nodeprov.errors import NodeprovError
from nodeprov.testbed.layout import Layout
from nodeprov.testbed.sshfiles import generate_keys, known_hosts, ssh_config, sshd_config

LAYOUT = Layout(Path("/srv/tb"))
needs_openssh = pytest.mark.skipif(
    not (shutil.which("ssh") and shutil.which("ssh-keygen")
         and os.access("/usr/sbin/sshd", os.X_OK)),
    reason="needs openssh-client and openssh-server")
PRIVSEP_DIR = Path("/run/sshd")


@pytest.fixture
def privsep_dir() -> None:
    """sshd run by root, even ``sshd -T``, needs its privilege separation directory, which only
    a running sshd's service makes (systemd's RuntimeDirectory): make it as that does."""
    if os.geteuid() == 0:
        PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)


def test_ssh_config_has_one_strict_block_per_node_matching_name_and_address() -> None:
    text = ssh_config(LAYOUT, [("node1", "10.77.3.2"), ("node2", "10.77.3.3")])
    parsed = paramiko.SSHConfig.from_text(text)
    for alias in ("node2", "10.77.3.3"):
        options = parsed.lookup(alias)
        assert options["hostname"] == "10.77.3.3"
        assert options["user"] == "root" and options["port"] == "22"
        identity_files: object = options["identityfile"]  # paramiko's one list-valued key
        assert identity_files == ["/srv/tb/id_ed25519"]
        assert options["identitiesonly"] == "yes"
        assert options["userknownhostsfile"] == "/srv/tb/known_hosts"
        assert options["stricthostkeychecking"] == "yes"
    assert text.count("\nHost ") == 2


@needs_openssh
def test_ssh_config_is_valid_for_openssh() -> None:
    text = ssh_config(LAYOUT, [("node1", "10.77.3.2")])
    checked = subprocess.run(["ssh", "-G", "-F", "/dev/stdin", "node1"], input=text,
                             capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr
    assert "hostname 10.77.3.2" in checked.stdout
    assert "kexalgorithms curve25519-sha256,curve25519-sha256@libssh.org" in checked.stdout


def test_known_hosts_names_each_node_by_name_and_address() -> None:
    assert known_hosts([("node1", "10.77.3.2", "ssh-ed25519 AAAAC3 node1\n")]) == (
        "node1,10.77.3.2 ssh-ed25519 AAAAC3\n")


@needs_openssh
@pytest.mark.usefixtures("privsep_dir")
def test_sshd_config_is_accepted_by_sshd(tmp_path: Path) -> None:
    generate_keys({tmp_path / "host_key": "node1"})
    config = tmp_path / "sshd_config"
    config.write_text(sshd_config("10.77.3.2", tmp_path / "host_key"))
    checked = subprocess.run(["/usr/sbin/sshd", "-T", "-f", str(config)], capture_output=True,
                             text=True)
    assert checked.returncode == 0, checked.stderr
    effective = set(checked.stdout.splitlines())
    assert {"permitrootlogin without-password", "passwordauthentication no",
            "listenaddress 10.77.3.2:22", "usepam yes"} <= effective


@needs_openssh
def test_generate_keys_makes_ed25519_pairs_and_reports_failures(tmp_path: Path) -> None:
    generate_keys({tmp_path / "a": "node1", tmp_path / "b": "node2"})
    assert (tmp_path / "b.pub").read_text().startswith("ssh-ed25519 ")
    assert (tmp_path / "a").stat().st_mode & 0o077 == 0
    with pytest.raises(NodeprovError, match="ssh-keygen failed: .*/missing/c"):
        generate_keys({tmp_path / "missing" / "c": "node3"})
