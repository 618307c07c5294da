"""Which inventory a command reads when none is given, and the one rule for files found
rather than given: an inventory (or a vault password script) not named on the command line is
never read from a folder others can write; the refusal names the file and what to do."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from nodeprov.cli import app
from nodeprov.config import read_settings
from nodeprov.inventory.finding import project_folder

HOSTS = "[gpu]\nn1 ansible_host=10.0.0.11\n[all:vars]\nnode_subnet=10.0.0.0/24\n"
PLANTED = "#!/bin/sh\ntouch {marker}\necho '{{\"_meta\": {{\"hostvars\": {{}}}}}}'\n"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("NODEPROV_INVENTORY", "ANSIBLE_CONFIG", "ANSIBLE_INVENTORY"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "home"


def planted(path: Path, marker: Path) -> Path:
    path.write_text(PLANTED.format(marker=marker))
    path.chmod(0o755)
    return path


def test_a_planted_inventory_yaml_in_a_world_writable_folder_never_runs(
        tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    public = tmp_path / "public"
    public.mkdir()
    public.chmod(0o1777)  # as /tmp
    marker = tmp_path / "ran"
    planted(public / "inventory.yaml", marker)
    monkeypatch.chdir(public)
    monkeypatch.setenv("NODEPROV_INVENTORY", str(tmp_path / "mine.ini"))
    (tmp_path / "mine.ini").write_text(HOSTS)
    # $NODEPROV_INVENTORY, named by the user, beats ./inventory.yaml, found by searching
    result = CliRunner().invoke(app, ["apply", "--list-hosts"])
    assert result.exit_code == 0, result.output
    assert "n1" in result.stdout
    monkeypatch.delenv("NODEPROV_INVENTORY")
    result = CliRunner().invoke(app, ["apply", "--list-hosts"])
    assert result.exit_code == 2
    assert (f"inventory.yaml: not read: {public} is world-writable, so anyone could have put "
            "it there; give it as INVENTORY if it is yours, or move it to a folder only you "
            "can write") in result.stderr
    assert not marker.exists(), "a planted inventory script ran"


def test_an_inventory_or_vault_script_ansible_cfg_names_in_a_public_folder_is_refused(
        tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    public = tmp_path / "public"
    public.mkdir()
    public.chmod(0o777)
    marker = tmp_path / "ran"
    project = tmp_path / "project"
    project.mkdir()
    (project / "hosts.ini").write_text(HOSTS)
    monkeypatch.chdir(project)
    planted(public / "vault.sh", marker)
    (project / "ansible.cfg").write_text(f"[defaults]\nvault_password_file = {public}/vault.sh"
                                         "\ninventory = hosts.ini\n")
    result = CliRunner().invoke(app, ["inventory", "--list"])
    assert result.exit_code == 2
    assert (f"{project}/ansible.cfg: [defaults] vault_password_file: {public}/vault.sh: not "
            f"read: {public} is world-writable") in result.stderr
    assert "give it as --vault-password-file" in result.stderr
    planted(public / "inventory.sh", marker)
    (project / "ansible.cfg").write_text(f"[defaults]\ninventory = {public}/inventory.sh\n")
    result = CliRunner().invoke(app, ["inventory", "--list"])
    assert result.exit_code == 2
    assert (f"{project}/ansible.cfg: [defaults] inventory: {public}/inventory.sh: not read: "
            f"{public} is world-writable") in result.stderr
    assert not marker.exists(), "a planted script ran"
    # given on the command line, it is the user's choice
    result = CliRunner().invoke(app, ["inventory", str(public / "inventory.sh"), "--list"])
    assert result.exit_code == 0, result.output
    assert marker.exists()


def test_a_source_of_the_list_that_is_not_there_is_skipped_with_a_warning(
        tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # as Ansible: DeepOps lists ./scripts/maas_inventory.py, present only with MAAS
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "inventory").write_text(HOSTS)
    (tmp_path / "ansible.cfg").write_text(
        "[defaults]\ninventory = ./config/inventory,./scripts/maas_inventory.py\n")
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["apply", "--list-hosts"])
    assert result.exit_code == 0, result.output
    assert (f"ansible.cfg: [defaults] inventory: {tmp_path}/scripts/maas_inventory.py does not "
            "exist; skipped") in result.stderr
    (tmp_path / "config" / "inventory").unlink()
    result = CliRunner().invoke(app, ["apply", "--list-hosts"])
    assert result.exit_code == 2 and "none exists; fix the setting" in result.stderr


def test_no_inventory_anywhere_says_every_place_in_order(
        tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["facts"])
    assert result.exit_code == 2
    assert ("no inventory: give a path, set inventory in ansible.cfg, set NODEPROV_INVENTORY, "
            "or create ./inventory.yaml") in result.stderr


def test_the_project_is_the_folder_of_the_ansible_cfg_in_use(tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "ansible.cfg").write_text("[defaults]\n")
    (tmp_path / ".ansible.cfg").write_text("[defaults]\n")
    environ = {"HOME": str(tmp_path)}
    assert project_folder(read_settings(environ, tmp_path / "repo"), environ) == (
        tmp_path / "repo")
    # a user's own ~/.ansible.cfg is no project's
    assert project_folder(read_settings(environ, tmp_path), environ) is None
