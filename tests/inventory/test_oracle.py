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


# ansible-core 2.19.14 cannot read a file whose path holds commas ("Origin.path must be ...
# str instead of _AnsibleTaggedStr" from its ini plugin), though it reads the folder holding it
COMMA_PATH = CORPUS / "ansible-test-path,has,commas"
CASES = sorted(p for p in CORPUS.iterdir() if p.is_dir() and p != COMMA_PATH)


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 25


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_nodeprov_inventory_list_matches_ansible_inventory(case: Path, tmp_path: Path) -> None:
    source = source_of(case)
    expected = ansible_list(source, tmp_path)
    result = CliRunner().invoke(app, ["inventory", str(source), "--list"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == expected


def test_a_file_path_holding_commas_is_a_path_not_a_host_list(tmp_path: Path) -> None:
    # Ansible's own test (path_with_comma_in_inventory) gives -i the file; this ansible-core
    # fails on the file, so the folder, read the same way, is the oracle here
    result = CliRunner().invoke(app, ["inventory", str(COMMA_PATH / "hosts"), "--list"])
    assert result.exit_code == 0, result.output
    listed = json.loads(result.stdout)
    assert listed == ansible_list(COMMA_PATH, tmp_path)
    assert listed["_meta"]["hostvars"]["localhost"]["inventory_var_from_path_with_commas"] == \
        "here"


def test_kayobes_two_inventories_merge_as_ansible_merges_them(tmp_path: Path) -> None:
    # kayobe runs ansible with -i ansible/inventory -i etc/kayobe/inventory: its defaults
    # reach the hosts only through the second source's groups
    sources = [str(CORPUS / "kayobe-ansible-inventory"), str(CORPUS / "kayobe-etc-inventory")]
    result = CliRunner().invoke(app, ["inventory", *sources, "--list"])
    assert result.exit_code == 0, result.output
    listed = json.loads(result.stdout)
    args = [word for source in sources for word in ("-i", source)]
    assert listed == json.loads(ansible("ansible-inventory", [*args, "--list"], tmp_path))
    assert "kolla_base_distro" in listed["_meta"]["hostvars"]["localhost"]


@pytest.mark.parametrize("sources", [
    ["gpu01,gpu02:2222, [2001:db8::7]:2200,"],
    ["localhost,"],
    # no ranges in a host list: the brackets stay in the name, with the port
    ["gpu[01:02]:22,cpu1"],
    # a host an earlier source named keeps its groups and port; a new one joins ungrouped
    ["HOSTS", "gpu01,gpu01:2200,new1:2201"],
])
def test_a_host_list_is_read_as_ansibles_host_list(tmp_path: Path, sources: list[str]) -> None:
    # -i 'a,b,' (no such file, a comma in it), as quick starts of ML clusters write it. Run
    # where group_vars/ lies: a host list has no folder, so they must not apply to its hosts
    # (ansible-inventory reads the group_vars/ of the folder it runs in: it runs elsewhere)
    project = write_tree(tmp_path / "project", {
        "hosts.ini": "[gpu]\ngpu01 ansible_port=2022\n",
        "group_vars/ungrouped.yml": "beside_the_file: 1\n"})
    args = [word for source in sources
            for word in ("-i", str(project / "hosts.ini") if source == "HOSTS" else source)]
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(project)
        ours = CliRunner().invoke(app, ["inventory", *args, "--list"])
    assert ours.exit_code == 0, ours.output
    assert json.loads(ours.stdout) == json.loads(ansible("ansible-inventory", [*args, "--list"],
                                                         tmp_path))


GRAPH_CASES = ["docs-aliases-ini", "yaml-repeated-group", "stackhpc-slurm-appliance-groups",
               "k3s-io-sample-with-lb", "ansible-test-ini-value-types"]


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
    # a file failing halfway keeps the hosts before its bad line, as Ansible keeps them
    "half-file": {"a.ini": "[gpu]\nh1\nh2 ansible_port=22 oops\n[cpu]\nh3\n",
                  "b.ini": "[gpu]\nh4\n"},
}


@pytest.mark.parametrize("case", sorted(DIRECTORY_CASES))
def test_an_inventory_folder_is_read_as_ansible_reads_it(case: str, tmp_path: Path) -> None:
    folder = write_tree(tmp_path / "inventory", DIRECTORY_CASES[case])
    result = CliRunner().invoke(app, ["inventory", str(folder), "--list"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == ansible_list(folder, tmp_path)
    if case != "subfolder":
        assert all(": warning: " in line and "; skipped: " in line
                   for line in result.stderr.splitlines()), result.stderr


def test_a_damaged_vault_in_an_inventory_folder_is_an_error_not_skipped(tmp_path: Path) -> None:
    # vaults that open are tests/inventory/test_vault_inventory.py's
    folder = write_tree(tmp_path / "inventory", {
        "hosts": "[gpu]\nnode1\n", "secret.yml": "$ANSIBLE_VAULT;1.1;AES256\n6162\n"})
    result = CliRunner().invoke(app, ["inventory", str(folder), "--list"])
    assert result.exit_code == 2 and "secret.yml: not a valid vault" in result.stderr


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


@pytest.mark.parametrize(("files", "message"), [
    ({"hosts.yml": "gpu:\n  vars: {x: 1, x: 2}\n  hosts: {h1: }\n", "more": "[cpu]\nh3\n"},
     "hosts.yml:2: duplicate key 'x'"),
    ({"hosts": "[gpu]\nh1\n", "more.ini": "[cpu]\nh3  # caf\xe9\n"},
     "more.ini:2: not UTF-8 text"),
])
def test_what_nodeprov_refuses_on_purpose_is_refused_in_a_folder_too(
        tmp_path: Path, files: dict[str, str], message: str) -> None:
    # Ansible reads these (with a warning at most); nodeprov refuses them in a single file, and
    # in a folder too rather than dropping the file's hosts from the run
    folder = tmp_path / "inventory"
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(text.encode("latin-1"))
    result = CliRunner().invoke(app, ["inventory", str(folder), "--list"])
    assert result.exit_code == 2 and message in result.stderr, result.output


def test_symlink_loops_in_a_folder_end_with_a_warning(tmp_path: Path) -> None:
    folder = write_tree(tmp_path / "inventory", {"hosts": "[gpu]\nh1\n", "sub/more": "h2\n"})
    (folder / "self").symlink_to("self")
    (folder / "sub" / "up").symlink_to("..")
    result = CliRunner().invoke(app, ["inventory", str(folder), "--list"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["gpu"] == {"hosts": ["h1"]}
    assert json.loads(result.stdout)["ungrouped"] == {"hosts": ["h2"]}
    assert "self: cannot be read: Too many levels of symbolic links; skipped" in result.stderr
    assert "up: skipped: this folder was read already" in result.stderr


@pytest.mark.parametrize(("text", "message"), [
    ("[gpu.children.a100.hosts]\nn1 = {}\n", "gpu.children: children must be a list"),
    ('[gpu]\nhosts = "n1"\n', "gpu.hosts: hosts must be a mapping in a TOML inventory, not text"),
])
def test_toml_shapes_ansibles_plugin_refuses_are_refused(tmp_path: Path, text: str,
                                                        message: str) -> None:
    (tmp_path / "hosts.toml").write_text(text)
    result = CliRunner().invoke(app, ["inventory", str(tmp_path / "hosts.toml"), "--list"])
    assert result.exit_code == 2 and message in result.stderr, result.output
