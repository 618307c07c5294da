"""Whole Ansible projects against ansible-core's own ``ansible-inventory --list``, run in the
project's folder as its user runs it: several inventory sources (ansible.cfg's list, INVENTORY
and ``-i``, ``ANSIBLE_INVENTORY``) merged in order, the group_vars/host_vars beside each source
and beside the project (the folder of its ansible.cfg), a vault-encrypted file among the
project's vars, and an inventory folder's ignored extensions and patterns."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nodeprov.cli import app
from nodeprov.config.defaults import AnsibleOptions
from nodeprov.inventory.opening import Surroundings, open_inventory
from nodeprov.inventory.reading import read_inventory
from nodeprov.inventory.templating import HostTemplar
from nodeprov.util.redact import MASK, Redactor
from tests.inventory.oracle import ansible
from tests.inventory.test_oracle import write_tree
from tests.inventory.test_vault import made

# DeepOps' layout (NVIDIA/deepops: ansible.cfg at the root, `inventory = ./config/inventory`,
# group_vars beside it in config/), with a second source in the list, as its ansible.cfg once
# had (`./config/inventory,./scripts/maas_inventory.py`), and vars at the project's root too
DEEPOPS_STYLE = {
    "ansible.cfg": "[defaults]\ninventory = ./config/inventory,./config/extra.yml\n"
                   "vault_password_file = ./.vault-pass\nroles_path = ./roles\n"
                   "gathering = smart\nfact_caching = jsonfile\n"
                   "[ssh_connection]\npipelining = True\n"
                   "control_path = ~/.ssh/ansible-%%r@%%h:%%p\n",
    "config/inventory": "[all]\nmgmt01 ansible_host=10.0.0.1\ngpu01 ansible_host=10.0.0.11\n"
                        "[kube-master]\nmgmt01\n[slurm-node]\ngpu01\n"
                        "[all:vars]\nnode_subnet=10.0.0.0/24\nsource=ini\n",
    "config/extra.yml": "all:\n  children:\n    slurm-node:\n      hosts:\n        gpu02:\n"
                        "          ansible_host: 10.0.0.12\n          ansible_port: 2222\n"
                        "      vars:\n        source: yaml\n",
    "config/group_vars/all.yml": "where: inventory\nrdzv_port: 29500\n",
    "config/group_vars/slurm-node.yml": "gpu_group: inventory\n",
    "group_vars/all/main.yml": "where: project\nproject_only: 1\nansible_user: ops\n",
    "group_vars/slurm-node.yml": "gpu_group: project\n",
    "host_vars/gpu01.yml": "rdzv_port: 29601\n",
    "config/host_vars/gpu01.yml": "rdzv_port: 29600\nhost_only: inventory\n",
    ".vault-pass": "Vault-Pass-4e1a\n",
    "plain.yml": "ansible_become_password: Become-Canary-77c1\n",
}


def deepops_style(root: Path) -> Path:
    write_tree(root, {name: text for name, text in DEEPOPS_STYLE.items()
                      if name != "ansible.cfg"})
    (root / ".vault-pass").chmod(0o600)
    made(["encrypt", "--vault-password-file", ".vault-pass", "--output",
          "group_vars/all/vault.yml", "plain.yml"], root)
    (root / "plain.yml").unlink()
    return write_tree(root, {"ansible.cfg": DEEPOPS_STYLE["ansible.cfg"]})


def listed(args: list[str], cwd: Path, monkeypatch: pytest.MonkeyPatch,
           environ: dict[str, str] | None = None) -> dict[str, object]:
    """``nodeprov inventory --list --show-vaulted ARGS`` run in ``cwd``, as ansible-inventory
    is run there with ``-i`` for each INVENTORY."""
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("HOME", str(cwd))
    for name, value in (environ or {}).items():
        monkeypatch.setenv(name, value)
    result = CliRunner().invoke(app, ["inventory", *args, "--list", "--show-vaulted"])
    assert result.exit_code == 0, result.output
    document: dict[str, object] = json.loads(result.stdout)
    return document


def theirs(args: list[str], cwd: Path, environ: dict[str, str] | None = None
           ) -> dict[str, object]:
    document: dict[str, object] = json.loads(ansible(
        "ansible-inventory", [*args, "--list"], cwd, {"HOME": str(cwd), **(environ or {})}))
    return document


def hostvars(document: dict[str, object], host: str) -> dict[str, object]:
    meta = document["_meta"]
    assert isinstance(meta, dict)
    values: dict[str, object] = meta["hostvars"][host]
    return values


def test_a_deepops_style_project_resolves_as_ansible_resolves_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = deepops_style(tmp_path / "deepops")
    ours = listed([], root, monkeypatch)
    assert ours == theirs([], root)
    gpu01, gpu02 = hostvars(ours, "gpu01"), hostvars(ours, "gpu02")
    # the later source wins; the project's vars come after the inventory's
    assert (gpu01["source"], gpu01["where"], gpu01["gpu_group"]) == ("yaml", "project",
                                                                      "project")
    assert (gpu01["rdzv_port"], gpu01["host_only"]) == (29601, "inventory")
    assert gpu02["ansible_become_password"] == "Become-Canary-77c1"  # the project's vault


def test_apply_connects_with_what_the_project_says(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """What apply and every connecting command open: user from the project's group_vars,
    port from the second source, the become password from the project's vault."""
    root = deepops_style(tmp_path / "deepops")
    monkeypatch.chdir(root)
    monkeypatch.setenv("HOME", str(root))
    redactor = Redactor()
    opened = open_inventory([], AnsibleOptions(),  # DeepOps-style settings: nothing to say
                            Surroundings(input, redactor, warn=pytest.fail))
    gpu02 = opened.inventory.host("gpu02")
    assert (gpu02.address, gpu02.port, gpu02.user, gpu02.become_password) == (
        "10.0.0.12", 2222, "ops", "Become-Canary-77c1")
    assert redactor.redact("Become-Canary-77c1") == MASK


def test_inventory_arguments_and_minus_i_merge_in_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a folder applies once per source it holds: a/ last, so its group_vars win again
    root = write_tree(tmp_path / "p", {
        "a/one.ini": "[gpu]\nn1 ansible_host=10.0.0.1 order=a\n",
        "a/three.yml": "gpu:\n  hosts:\n    n3:\n      order: a3\n",
        "a/group_vars/all.yml": "folder: a\n",
        "b/two.ini": "[gpu]\nn1 order=b\nn2\n[gpu:vars]\nkind=b\n",
        "b/group_vars/all.yml": "folder: b\n",
    })
    sources = ["a/one.ini", "b/two.ini", "a/three.yml"]
    ours = listed([sources[0], "-i", sources[1], "-i", sources[2]], root, monkeypatch)
    assert ours == theirs([arg for source in sources for arg in ("-i", source)], root)
    assert (hostvars(ours, "n1")["order"], hostvars(ours, "n2")["folder"]) == ("b", "a")


def test_ansible_inventory_lists_several_sources(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    root = write_tree(tmp_path / "p", {
        "ansible.cfg": "[defaults]\ninventory = one.ini\n",
        "one.ini": "[gpu]\nn1 x=1\n", "two.yml": "all:\n  hosts:\n    n1: {x: 2}\n",
        "group_vars/all.yml": "y: project\n"})
    environ = {"ANSIBLE_INVENTORY": "two.yml,one.ini"}
    ours = listed([], root, monkeypatch, environ)
    assert ours == theirs([], root, environ)
    assert hostvars(ours, "n1")["x"] == 1


@pytest.mark.parametrize("settings", [
    "",  # Ansible's defaults: .orig, .cfg, .retry, ~, .md ... skipped
    "inventory_ignore_extensions = .ini, ~\ninventory_ignore_patterns = ^old, [.]skip$\n",
    "[inventory]\nignore_patterns = ^n\n",
])
def test_an_inventory_folder_skips_what_ansible_skips(
        settings: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = write_tree(tmp_path / "p", {
        "ansible.cfg": f"[defaults]\ninventory = inv\n{settings}",
        "inv/hosts": "[gpu]\nn1\n", "inv/hosts.orig": "[gpu]\nn2\n",
        "inv/backup~": "[gpu]\nn3\n", "inv/extra.ini": "[gpu]\nn4\n",
        "inv/old-hosts": "[gpu]\nn5\n", "inv/more.skip": "[gpu]\nn6\n",
        "inv/notes.cfg": "[gpu]\nn7\n", "inv/new": "[cpu]\nn8\n"})
    ours = listed([], root, monkeypatch)
    assert ours == theirs([], root)
    expected = {"": {"n1", "n4", "n5", "n6", "n8"}, "[inventory]": {"n1", "n4", "n5", "n6"}}
    hosts = set(hostvars_names(ours))
    assert hosts == expected.get(settings[:11], {"n1", "n2", "n7", "n8"})


def hostvars_names(document: dict[str, object]) -> list[str]:
    """Every host of a --list document (hosts without vars have no hostvars entry)."""
    return [host for name, group in document.items() if name != "_meta"
            for host in group.get("hosts", [])]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("host", "var"), [
    ("n1", "inventory_file"), ("n1", "inventory_dir"), ("n2", "inventory_file"),
    ("n2", "inventory_dir"), ("n2", "key_path"),
])
def test_inventory_file_is_the_source_that_first_named_the_host(
        host: str, var: str, tmp_path: Path) -> None:
    root = write_tree(tmp_path / "p", {
        "a/hosts.ini": "[gpu]\nn1\n",
        "b/more/hosts.yml": "all:\n  hosts:\n    n1:\n    n2:\n"
                            "      key_path: '{{ inventory_dir }}/keys/id'\n"})
    sources = [root / "a" / "hosts.ini", root / "b"]
    ours = _rendered(sources, host, var)
    output = ansible("ansible", [arg for source in sources for arg in ("-i", str(source))]
                     + [host, "-m", "debug", "-a", f"var={var}"], root)
    assert ours == json.loads(output.split("=>", 1)[1])[var]


@pytest.mark.parametrize("var", ["inventory_file", "inventory_dir"])
def test_a_host_lists_hosts_know_their_source_as_in_ansible(tmp_path: Path, var: str) -> None:
    # Ansible's: the list's own text, and "None" for the folder it does not have
    source = "gpu01,gpu02,"
    output = ansible("ansible", ["-i", source, "gpu01", "-m", "debug", "-a", f"var={var}"],
                     tmp_path)
    assert _rendered([Path(source)], "gpu01", var) == json.loads(output.split("=>", 1)[1])[var]


def _rendered(sources: list[Path], host: str, var: str) -> object:
    """``var`` of ``host`` as a template naming it renders (a magic variable included)."""
    resolved = read_inventory(sources)
    resolved.hostvars[host]["probe"] = f"{{{{ {var} }}}}"
    return HostTemplar(resolved).value(host, "probe")
