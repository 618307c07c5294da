"""A repository kept for Ansible, used as it is: ``nodeprov config`` against ``ansible-config
dump --only-changed``, the inventory from ansible.cfg, -K's password below the inventory's, and
no decrypted value in any message (units; on a testbed:
tests/reliability/test_ansible_project_testbed.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nodeprov.cli import app
from nodeprov.config.defaults import AnsibleOptions
from nodeprov.config.definitions import DEFINITIONS
from nodeprov.inventory.opening import Surroundings, open_inventory
from nodeprov.util.redact import MASK, Redactor
from tests.inventory.oracle import ANSIBLE_BIN
from tests.inventory.test_vault import made

CORPUS = Path(__file__).parent.parent / "data" / "ansible-cfg"
INVENTORY = "[gpu]\nn1 ansible_host=10.0.0.11\n[all:vars]\nnode_subnet=10.0.0.0/24\n"


@pytest.mark.parametrize("name", ["deepops", "ceph-ansible-dot-ansible", "openshift-ansible",
                                  "0x07cf-dev-homelab"])
def test_config_prints_what_ansible_config_dump_prints(name: str, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The lines of the settings nodeprov reads, word for word (Ansible's base settings)."""
    (tmp_path / "ansible.cfg").write_bytes((CORPUS / f"{name}.cfg").read_bytes())
    program = ANSIBLE_BIN / "ansible-config"
    if not program.exists():
        pytest.skip("ansible-core is not installed (pip install -e '.[test]')")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    theirs = subprocess.run([str(program), "dump", "--only-changed"], cwd=tmp_path,
                            env={**clean, "HOME": str(tmp_path)}, capture_output=True,
                            text=True, timeout=300, check=True).stdout.splitlines()
    names = {d.ansible for d in DEFINITIONS.values() if not d.plugin} | {"CONFIG_FILE"}
    expected = [line for line in theirs if line.partition("(")[0] in names]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    result = CliRunner().invoke(app, ["config"])
    assert result.exit_code == 0, result.output
    ours = result.stdout.splitlines()
    assert ours[:len(expected)] == expected
    assert "not used by nodeprov (docs/ansible.md says why):" in ours


def test_the_inventory_comes_from_ansible_cfg_and_what_might_matter_is_said_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "ansible.cfg").write_text(
        "[defaults]\ninventory = inv/hosts.ini\ngathering = smart\nroles_path = roles\n"
        "transport = paramiko\n[paramiko_connection]\nlook_for_keys = False\n")
    (tmp_path / "inv").mkdir()
    (tmp_path / "inv" / "hosts.ini").write_text(INVENTORY)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("ANSIBLE_NOCOLOR", "1")
    result = CliRunner().invoke(app, ["apply", "--list-hosts"])
    assert result.exit_code == 0, result.output
    assert "n1" in result.stdout
    # roles, fact gathering, colours cannot change what nodeprov does: not said
    assert result.stderr == (f"nodeprov: warning: {tmp_path}/ansible.cfg: not used by nodeprov "
                             "(nodeprov config lists all): [defaults] transport, "
                             "[paramiko_connection] look_for_keys\n")
    shown = CliRunner().invoke(app, ["config"]).stdout
    assert all(entry in shown for entry in ("[defaults] gathering", "[defaults] roles_path",
                                            "[defaults] transport", "ANSIBLE_NOCOLOR"))


@pytest.mark.parametrize("name", sorted(p.stem for p in CORPUS.glob("*.cfg")))
def test_the_real_ansible_cfgs_say_only_what_might_matter(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """DeepOps' named 17 settings on every command; of the real files, only these name any."""
    (tmp_path / "ansible.cfg").write_bytes((CORPUS / f"{name}.cfg").read_bytes())
    (tmp_path / "hosts.ini").write_text(INVENTORY)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    result = CliRunner().invoke(app, ["apply", "hosts.ini", "--list-hosts"])
    lines = [line for line in result.stderr.splitlines() if "not used by nodeprov" in line]
    assert [line.partition("(nodeprov config lists all): ")[2] for line in lines] == (
        [SAID[name]] if name in SAID else [])


SAID = {  # what each real file sets that nodeprov does not use, yet a user might expect to
    "algo": "[paramiko_connection] record_host_keys",
    "k3s-io-k3s-ansible": "[defaults] become",  # no setting there, in Ansible either
    **dict.fromkeys(("slurm-appliance", "slurm-appliance-cookiecutter", "slurm-appliance-root",
                     "slurm-appliance-site-env", "slurm-appliance-stackhpc-env"),
                    "[defaults] any_errors_fatal"),
}


def test_an_inventory_password_beats_the_one_typed_for_minus_k(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "hosts.ini").write_text(
        "n2 ansible_host=10.0.0.12 ansible_become_password=from-inventory\n" + INVENTORY)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    asked: list[str] = []

    def typed(text: str) -> str:
        asked.append(text)
        return "typed-at-K"

    redactor = Redactor()
    opened = open_inventory([Path("hosts.ini")], AnsibleOptions(ask_become_pass=True),
                            Surroundings(typed, redactor, warn=lambda line: None))
    assert asked == ["BECOME password: "]
    assert {h.name: h.become_password for h in opened.inventory.hosts} == {
        "n1": "typed-at-K", "n2": "from-inventory"}
    assert redactor.redact("typed-at-K from-inventory") == f"{MASK} {MASK}"


def test_a_vaulted_value_is_masked_in_the_error_that_quotes_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pw").write_text("alpha\n")
    (tmp_path / "group_vars" / "all").mkdir(parents=True)
    (tmp_path / "plain").write_text("nccl_socket_ifname: 'Iface; Canary-77'\n")
    made(["encrypt", "--vault-password-file", "pw", "--output", "group_vars/all/vault.yml",
          "plain"], tmp_path)
    (tmp_path / "hosts.ini").write_text(INVENTORY)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    result = CliRunner().invoke(app, ["facts", "hosts.ini", "--vault-password-file", "pw"])
    assert result.exit_code == 2
    assert "group_vars/all/vault.yml:1: n1: nccl_socket_ifname:" in result.stderr
    assert "Canary-77" not in result.output and MASK in result.stderr


@pytest.mark.parametrize(("section", "key", "value", "message"), [
    ("privilege_escalation", "become_method", "su", "'su' is not supported: nodeprov becomes "
     "root with sudo only"),
    ("privilege_escalation", "become_user", "postgres", "'postgres' is not supported: nodeprov "
     "becomes root only"),
])
def test_a_become_setting_nodeprov_cannot_honour_is_refused_naming_the_entry(
        section: str, key: str, value: str, message: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "ansible.cfg").write_text(f"[{section}]\n{key} = {value}\n")
    (tmp_path / "hosts.ini").write_text(INVENTORY)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    result = CliRunner().invoke(app, ["facts", "hosts.ini"])
    assert result.exit_code == 2
    assert f"{tmp_path}/ansible.cfg: [{section}] {key}: n1: ansible_{key}: {message}" in (
        result.stderr)
