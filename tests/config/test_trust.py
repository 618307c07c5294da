"""The one rule for files nodeprov finds rather than is given (``config.trust``), and
ansible.cfg's search with it: never from a folder others can write, whatever
``ANSIBLE_CONFIG`` says, empty included; a file it names is read."""

from __future__ import annotations

import grp
import os
from pathlib import Path

import pytest

from nodeprov.config.search import find_config_file
from nodeprov.config.trust import writable_by_others


@pytest.mark.parametrize(("mode", "why"), [
    (0o755, ""),
    (0o700, ""),
    (0o777, "is world-writable"),
    (0o1777, "is world-writable"),  # sticky stops renaming another's file, not planting one
])
def test_a_folder_others_can_write_is_named(tmp_path: Path, mode: int, why: str) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    folder.chmod(mode)
    said = writable_by_others(folder / "inventory.yaml")
    assert (said == "") if not why else (said == f"{folder} {why}")


def test_a_group_writable_folder_counts_when_the_group_is_shared(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o775)
    shared = next((g for g in grp.getgrall() if g.gr_gid != os.getgid()), None)
    if shared is None:
        pytest.skip("this machine has one group")
    os.chown(folder, -1, shared.gr_gid)  # root's tests: any group
    assert writable_by_others(folder / "ansible.cfg") == (
        f"the folder {folder} is writable by group {shared.gr_name}")


def test_a_file_others_can_write_is_named_too(tmp_path: Path) -> None:
    path = tmp_path / "ansible.cfg"
    path.write_text("")
    path.chmod(0o666)
    assert writable_by_others(path) == f"{path} is world-writable"


def test_a_symlink_into_a_folder_others_can_write_counts(tmp_path: Path) -> None:
    public = tmp_path / "public"
    public.mkdir()
    public.chmod(0o777)
    (public / "hosts").write_text("")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "hosts").symlink_to(public / "hosts")
    assert writable_by_others(tmp_path / "mine" / "hosts") == f"{public} is world-writable"


@pytest.fixture
def public_cwd(tmp_path: Path) -> Path:
    cwd = tmp_path / "public"
    cwd.mkdir()
    cwd.chmod(0o1777)
    (cwd / "ansible.cfg").write_text("[defaults]\nvault_password_file = ./planted.sh\n")
    return cwd


@pytest.mark.parametrize("environ", [{}, {"ANSIBLE_CONFIG": ""}, {"ANSIBLE_CONFIG": "."}])
def test_a_planted_ansible_cfg_is_not_read_whatever_ansible_config_says(
        public_cwd: Path, environ: dict[str, str]) -> None:
    # with ANSIBLE_CONFIG set but empty, ./ansible.cfg was read from a world-writable folder
    # (Ansible reads it so: the empty path is the current folder) and its vault script ran
    home = public_cwd.parent / "home"
    found, warning = find_config_file({"HOME": str(home), **environ}, public_cwd,
                                      public_cwd.parent / "no-system.cfg")
    assert found is None
    assert warning.startswith(f"{public_cwd}/ansible.cfg: not read: {public_cwd} is "
                              "world-writable, so anyone could have put it there")
    assert "point ANSIBLE_CONFIG at the file if it is yours" in warning


def test_a_file_ansible_config_names_is_read_wherever_it_is(public_cwd: Path) -> None:
    environ = {"HOME": str(public_cwd.parent), "ANSIBLE_CONFIG": "ansible.cfg"}
    assert find_config_file(environ, public_cwd, public_cwd / "none.cfg") == (
        public_cwd / "ansible.cfg", "")
