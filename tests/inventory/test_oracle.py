"""nodeprov's resolution against ansible-core's own, on every inventory of the corpus
(tests/data/inventories, sources in its README): every host, its groups, every variable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nodeprov.cli import app
from tests.inventory.oracle import ansible, ansible_list

CORPUS = Path(__file__).parent.parent / "data" / "inventories"


def source_of(case: Path) -> Path:
    """A case's inventory: its only file (README.md aside), else the folder itself."""
    files = [p for p in case.iterdir() if p.is_file() and p.name != "README.md"]
    return files[0] if len(files) == 1 else case


CASES = sorted(p for p in CORPUS.iterdir() if p.is_dir())


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 25


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_nodeprov_inventory_list_matches_ansible_inventory(case: Path, tmp_path: Path) -> None:
    source = source_of(case)
    expected = ansible_list(source, tmp_path)
    result = CliRunner().invoke(app, ["inventory", str(source), "--list"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == expected


GRAPH_CASES = ["docs-aliases-ini", "yaml-repeated-group", "stackhpc-slurm-appliance-groups",
               "k3s-io-sample-with-lb"]


@pytest.mark.parametrize("name", GRAPH_CASES)
def test_graph_and_host_match_ansible_inventory(name: str, tmp_path: Path) -> None:
    source = source_of(CORPUS / name)
    graph = CliRunner().invoke(app, ["inventory", str(source), "--graph", "all"]).stdout
    assert graph == ansible("ansible-inventory", ["-i", str(source), "--graph"], tmp_path)
    listed = json.loads(CliRunner().invoke(app, ["inventory", str(source), "--list"]).stdout)
    for host in list(listed["_meta"]["hostvars"])[:2]:
        ours = CliRunner().invoke(app, ["inventory", str(source), "--host", host]).stdout
        theirs = ansible("ansible-inventory", ["-i", str(source), "--host", host], tmp_path)
        assert json.loads(ours) == json.loads(theirs)


def test_extra_vars_join_every_host_as_with_ansible_inventory(tmp_path: Path) -> None:
    # -e beats the inventory's own value (rdzv_port) and adds new ones, typed as Ansible types
    # them: KEY=VALUE words are strings, an inline mapping keeps its types. Values are shown as
    # read, before nodeprov's checks (apply refuses ipv6=maybe; the listing explains why).
    source = source_of(CORPUS / "docs-aliases-ini")
    extra = ["-e", "rdzv_port=29611 ansible_user=ops ipv6=maybe", "-e",
             '{"pip_packages": ["numpy"]}']
    ours = CliRunner().invoke(app, ["inventory", str(source), "--list", *extra])
    assert ours.exit_code == 0, ours.output
    listed = json.loads(ours.stdout)
    assert listed == json.loads(ansible("ansible-inventory",
                                        ["-i", str(source), "--list", *extra], tmp_path))
    assert all(values["rdzv_port"] == "29611" for values in listed["_meta"]["hostvars"].values())
    host = next(iter(listed["_meta"]["hostvars"]))
    ours_host = CliRunner().invoke(app, ["inventory", str(source), "--host", host, *extra])
    assert json.loads(ours_host.stdout) == json.loads(ansible(
        "ansible-inventory", ["-i", str(source), "--host", host, *extra], tmp_path))


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


DIRECTORY_CASES = {
    # Ansible reads subfolders too; only the top folder's group_vars apply (to node2 as well)
    "subfolder": {"base": "[gpu]\nnode1\n", "prod/hosts": "[gpu]\nnode2\n[cpu]\ncpu1\n",
                  "group_vars/gpu.yml": "top: 1\n", "prod/group_vars/gpu.yml": "inner: 1\n"},
    # files Ansible cannot read are skipped with a warning: a README, an example file
    "stray-files": {"hosts": "[gpu]\nnode1\n", "README": "Inventory for the lab cluster.\n",
                    "hosts.yml.example": "all:\n  hosts:\n    gpu01:\n"},
}


@pytest.mark.parametrize("case", sorted(DIRECTORY_CASES))
def test_an_inventory_folder_is_read_as_ansible_reads_it(case: str, tmp_path: Path) -> None:
    folder = write_tree(tmp_path / "inventory", DIRECTORY_CASES[case])
    result = CliRunner().invoke(app, ["inventory", str(folder), "--list"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == ansible_list(folder, tmp_path)
    if case == "stray-files":
        assert [line.split(": ")[1] for line in result.stderr.splitlines()] == [
            "warning", "warning"]
        assert f"{folder}/README:1: " in result.stderr and "skipped" in result.stderr


def test_vault_in_an_inventory_folder_is_still_an_error(tmp_path: Path) -> None:
    folder = write_tree(tmp_path / "inventory", {
        "hosts": "[gpu]\nnode1\n", "secret.yml": "$ANSIBLE_VAULT;1.1;AES256\n6162\n"})
    result = CliRunner().invoke(app, ["inventory", str(folder), "--list"])
    assert result.exit_code == 2 and "secret.yml:1: the whole file is vault-encrypted" in (
        result.stderr)


SCRIPT = """#!/usr/bin/env python3
import json, sys
if sys.argv[1] == "--list":
    print(json.dumps({"gpu": ["gpu01", "gpu02"], "db": {"hosts": ["db1"], "vars": {"x": 1}}}))
else:
    print(json.dumps({"ansible_host": "10.0.0." + sys.argv[2][-1]}))
"""


def test_a_script_without_meta_is_asked_for_every_hosts_vars(tmp_path: Path) -> None:
    # the old script format: groups as bare lists, no _meta: each host's vars come from
    # --host (without them, SSH would go to the bare name, not ansible_host)
    script = tmp_path / "inventory.py"
    script.write_text(SCRIPT)
    script.chmod(0o755)
    result = CliRunner().invoke(app, ["inventory", str(script), "--list"])
    assert result.exit_code == 0, result.output
    listed = json.loads(result.stdout)
    assert listed == ansible_list(script, tmp_path)
    assert listed["_meta"]["hostvars"]["gpu02"] == {"ansible_host": "10.0.0.2"}
