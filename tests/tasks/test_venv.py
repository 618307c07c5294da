"""The venv task: plans on recorded facts, and for real on the local test cluster."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from nodeprov.cli import app
from nodeprov.inventory import Host
from nodeprov.remote import reader
from nodeprov.remote.facts import Facts
from nodeprov.tasks.base import Context, ParamError, Run, TaskFailed, parse_params
from nodeprov.tasks.torch.requirements import parse_dist_infos, unsatisfied
from nodeprov.tasks.venv import (
    VenvParams,
    VenvState,
    at_least,
    parse_probe,
    parse_pyvenv_cfg,
    plan,
    probe,
)
from nodeprov.testbed.cluster import Testbed
from nodeprov.wheels import installer
from nodeprov.wheels.peers import Distribution, PeerUpload
from nodeprov.wheels.sources import Sources
from tests.conftest import MakeTestbed
from tests.tasks.kit import make_facts, one_node

VENV = "/opt/nodeprov/venv"
HAS_ENSUREPIP = "/usr/lib/python3.11/ensurepip"


def node_facts(**changes: Any) -> Facts:
    return make_facts(**{"python_path": "/usr/bin/python3", "python_version": "3.11.2",
                          **changes})


def context(facts: Facts) -> Context:
    return one_node(facts, Host("node1", "10.0.0.11", "10.0.0.11"))


def observed(cfg: str = "", runs: bool | str = False, entries: str = "",
             ensurepip: str = HAS_ENSUREPIP, uv: str = "uv", unsafe: str = "") -> str:
    """What the probe prints for a venv with this pyvenv.cfg ("": none), python that runs (the
    version it says: True for pyvenv.cfg's) or not, entries in its folder, lib folders with
    ensurepip, uv's line (UV_PROBE), and the first folder others may change."""
    ran = (parse_pyvenv_cfg(cfg) or "") if runs is True else runs or ""
    return (f"{uv}\n{ran}\n{'yes' if entries else ''}\n{ensurepip}\n{unsafe}\n"
            + reader.files_output({f"{VENV}/pyvenv.cfg": cfg or None}))


EXISTING = observed("home = /usr/bin\nversion = 3.11.2\n", runs=True, entries="bin\nlib")


def test_existing_venv_is_kept() -> None:
    result = plan(context(node_facts()), VenvParams(VENV, "3.10"), EXISTING)
    assert result.in_sync
    assert result.notes == (f"venv {VENV} already runs python 3.11.2 (>= 3.10)",)


def test_missing_venv_is_created_with_the_nodes_python() -> None:
    result = plan(context(node_facts()), VenvParams(VENV), observed())
    (change,) = result.changes
    assert change.summary == f"create venv {VENV} with /usr/bin/python3 3.11.2, pip put in by uv"
    create, seed = change.actions
    assert create == Run(("/usr/bin/python3", "-m", "venv", "--without-pip", "--", VENV))
    assert isinstance(seed, Run) and seed.argv[:2] == ("sh", "-c") and seed.argv[4:6] == (
        installer.UV, VENV)


def test_uv_is_pushed_where_missing_and_pip_installs_where_uv_cannot_run(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    mirror = Sources(index_url="file:///mirror/simple", find_links=("/srv/wheels",))
    params = VenvParams(VENV, index_url=mirror.index_url, find_links=mirror.find_links)
    (change,) = plan(context(node_facts()), params,
                     observed(uv="no-uv glibc 2.36")).changes
    copy, create, _ = change.actions
    local = str(tmp_path / "nodeprov" / "uv" / f"uv-{installer.UV_VERSION}-x86_64-glibc2.36")
    assert isinstance(copy, PeerUpload) and copy.local_path == local and not copy.address
    assert copy.fill is not None and copy.fill.sources == mirror  # not pip's default
    assert copy.fill.specs == (f"uv=={installer.UV_VERSION}",)
    assert "manylinux_2_17_x86_64" in copy.fill.platform
    assert "manylinux_2_36_x86_64" in copy.fill.platform
    assert copy.optional == installer.WITHOUT_UV  # without uv: ensurepip, then pip
    # unpacked from root's checked copy of the upload, never from the login user's folder
    assert copy.staged and copy.then[-3:] == (copy.staged, installer.UV, copy.remote_path)
    assert "--without-pip" in str(create)
    assert change.summary.endswith(
        f"pip put in by uv (uv {installer.UV_VERSION} uploaded from this machine)")
    for uv, arch, why in (("no-uv ", "x86_64", "the node has no glibc"),
                          ("no-uv glibc 2.36", "ppc64le", "no uv build for ppc64le"),
                          ("uv-failed uv: Exec format error", "x86_64",
                           "uv failed: uv: Exec format error; remove")):
        (change,) = plan(context(node_facts(arch=arch)), VenvParams(VENV),
                         observed(uv=uv)).changes
        assert change.summary.endswith(f"pip put in by ensurepip ({why}") or why in change.summary
        assert change.actions == (Run(("/usr/bin/python3", "-m", "venv", "--", VENV)),)


def test_uv_is_fanned_out_over_the_node_subnet_like_the_wheels() -> None:
    distribution = Distribution()
    params = VenvParams(VENV, subnet="192.0.2.0/24")  # the recorded eth0's subnet
    summaries = []
    for name in ("node1", "node2"):
        host, facts = Host(name, "192.0.2.2", "192.0.2.2"), node_facts()
        ctx = Context(host, facts, {name: (host, facts)}, {Distribution: distribution})
        (change,) = plan(ctx, params, observed(uv="no-uv glibc 2.36")).changes
        copy = change.actions[0]
        assert isinstance(copy, PeerUpload) and copy.address == "192.0.2.2"
        summaries.append(change.summary)
    assert summaries[0].endswith(f"(uv {installer.UV_VERSION} uploaded from this machine)")
    assert summaries[1].endswith(f"(uv {installer.UV_VERSION} from node1 over the node subnet)")


def test_debian_without_ensurepip_gets_the_venv_package_first() -> None:
    result = plan(context(node_facts()), VenvParams(VENV), observed(ensurepip=""))
    (change,) = result.changes
    assert "installing python3.11-venv" in change.summary
    assert change.actions[0] == Run(("env", "DEBIAN_FRONTEND=noninteractive", "apt-get",
                                     "install", "-y", "--no-install-recommends",
                                     "python3.11-venv"))
    # not Debian's python, or not apt: the package would not help; venv says what is wrong
    for facts in (node_facts(python_path="/opt/python/bin/python3"),
                  node_facts(package_manager="dnf")):
        (change,) = plan(context(facts), VenvParams(VENV), observed(ensurepip="")).changes
        assert "apt-get" not in str(change.actions) and len(change.actions) == 2


def test_too_old_python_fails_clearly() -> None:
    with pytest.raises(TaskFailed, match=r"no python >= 3\.10 on the node \(found: "
                       r"/usr/bin/python3 \(3\.8\.10\)\); install a python >= 3\.10 with its "
                       r"venv module \(apt-get install python3 python3-venv.*or lower "
                       r"python_version"):
        plan(context(node_facts(python_version="3.8.10")), VenvParams(VENV, "3.10"), observed())
    with pytest.raises(TaskFailed, match=r"the node has no python3; install a python >= 3\.10"):
        plan(context(node_facts(python_path=None, python_version=None)), VenvParams(VENV),
             observed())


# Rocky/RHEL 9: python3 is 3.9; `dnf install python3.11 python3.12` puts these beside it
RHEL9 = {"python_version": "3.9.21", "package_manager": "dnf",
         "pythons": (("/usr/bin/python3.12", "3.12.5"), ("/usr/bin/python3.11", "3.11.9"),
                     ("/usr/bin/python3.9", "3.9.21"))}


def test_a_too_old_python3_gives_way_to_the_oldest_new_enough_python3_x() -> None:
    (change,) = plan(context(node_facts(**RHEL9)), VenvParams(VENV, "3.10"), observed()).changes
    assert change.summary.startswith(f"create venv {VENV} with /usr/bin/python3.11 3.11.9")
    assert "/usr/bin/python3.11" in str(change.actions)
    # a pre-release is taken only where nothing else fits
    rc = {**RHEL9, "pythons": (("/usr/bin/python3.10", "3.10.0rc1"), *RHEL9["pythons"])}
    (change,) = plan(context(node_facts(**rc)), VenvParams(VENV, "3.10"), observed()).changes
    assert "with /usr/bin/python3.11 3.11.9" in change.summary
    # the system python3 when it is new enough, even beside newer ones
    (change,) = plan(context(node_facts(**{**RHEL9, "python_version": "3.10.4"})),
                     VenvParams(VENV, "3.10"), observed()).changes
    assert "with /usr/bin/python3 3.10.4" in change.summary
    with pytest.raises(TaskFailed, match=r"found: /usr/bin/python3 \(3\.9\.21\), "
                       r"/usr/bin/python3\.12 \(3\.12\.5\).*dnf install python3\.12"):
        plan(context(node_facts(**RHEL9)), VenvParams(VENV, "3.13"), observed())


def test_a_python3_too_old_for_nodeprovs_own_scripts_is_refused_even_beside_a_newer_one() -> None:
    # RHEL 8: python3 is 3.6, which cannot run the matrix or peer scripts (they need 3.8)
    rhel8 = {**RHEL9, "python_version": "3.6.8"}
    with pytest.raises(TaskFailed, match=r"python3 \(/usr/bin/python3\) is 3\.6\.8; nodeprov's "
                       r"node-side scripts need python3 >= 3\.8: .*alternatives --set python3"):
        plan(context(node_facts(**rhel8)), VenvParams(VENV, "3.10"), observed())


def test_old_or_broken_venv_is_rebuilt() -> None:
    old = observed("version = 3.9.2\n", runs=True, entries="bin")
    (change,) = plan(context(node_facts()), VenvParams(VENV, "3.10"), old).changes
    assert change.summary.startswith(f"rebuild venv {VENV}: its python 3.9.2 is older than 3.10")
    assert change.actions[0] == Run(("rm", "-rf", "--", VENV))
    broken = observed("version = 3.11.2\n", runs=False, entries="bin")
    (change,) = plan(context(node_facts()), VenvParams(VENV), broken).changes
    assert "its python (3.11.2) no longer runs" in change.summary
    # python3 moved on by a distribution upgrade: the venv's link now starts 3.12
    moved = observed("version = 3.11.2\n", runs="3.12.3", entries="bin")
    (change,) = plan(context(node_facts()), VenvParams(VENV), moved).changes
    assert change.summary.startswith(f"rebuild venv {VENV}: its python now runs 3.12.3, not the "
                                     "3.11.2 it was built with, whose packages it no longer sees")
    assert change.actions[0] == Run(("rm", "-rf", "--", VENV))
    patched = observed("version = 3.11.2\n", runs="3.11.9", entries="bin")  # same folder
    assert plan(context(node_facts()), VenvParams(VENV), patched).in_sync


def test_a_folder_that_is_no_venv_is_left_alone() -> None:
    with pytest.raises(TaskFailed, match="exists and is not a venv"):
        plan(context(node_facts()), VenvParams(VENV), observed(entries="data.csv"))


def test_a_venv_in_a_folder_others_may_change_is_refused_naming_it() -> None:
    """Issue #34: root runs the venv's python and trusts its CA bundle; whoever may write a
    folder on its way could replace them."""
    with pytest.raises(TaskFailed, match=r"^/tmp \(uid 0, mode 1777\) is not root's alone: "
                       f"another user could replace the venv {VENV} or its CA bundle"):
        plan(context(node_facts()), VenvParams(VENV), observed(unsafe="/tmp 0 1777"))


def test_params_are_checked() -> None:
    with pytest.raises(ParamError, match="not an absolute path"):
        parse_params(VenvParams, {"path": "venv"})
    with pytest.raises(ParamError, match="not a version"):
        parse_params(VenvParams, {"python_version": "three"})


def test_probe_parsing_and_versions() -> None:
    state = parse_probe(observed("version_info = 3.12.1\n", runs=True, entries="bin"))
    assert (state.version, state.running, state.occupied) == ("3.12.1", "3.12.1", True)
    assert parse_probe(observed("version = 3.12.1\n", runs="3.12.1; rm -rf /")).running is None
    assert parse_pyvenv_cfg("home = /usr/bin\n") is None
    assert at_least("3.11.2", "3.10") and at_least("3.10.0", "3.10")
    assert not at_least("3.9.18", "3.10") and at_least("3.12.0rc1", "3.12")


def test_the_probe_reads_a_venv_as_parse_probe_expects(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.11.2")  # no final newline

    def state() -> VenvState:
        argv = probe(VenvParams(str(venv))).argv
        return parse_probe(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)

    assert (state().version, state().running, state().occupied) == ("3.11.2", None, True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    assert state().running == ".".join(map(str, sys.version_info[:3]))
    (venv / "bin" / "python").unlink()
    (venv / "bin" / "python").symlink_to(tmp_path / "gone")  # the system python was upgraded
    assert state().running is None
    (venv / "bin" / "python").unlink()
    (venv / "bin" / "python").symlink_to("/bin/echo")  # runs, but says no version
    assert state().running is None
    shutil.rmtree(venv / "bin")
    (venv / "pyvenv.cfg").unlink()
    assert (state().version, state().occupied) == (None, False)
    (venv / ".hidden").touch()
    assert state().occupied
    venv.chmod(0o757)  # the venv itself first, then each folder above it
    assert state().unsafe == f"{venv} {os.geteuid()} 757"


def test_installed_distributions_and_requirements() -> None:
    installed = parse_dist_infos("typing_extensions-4.16.0.dist-info\nZope.Interface-7.0.dist-info"
                                 "\ntorch-2.13.0+cpu.dist-info\n*.dist-info\nREADME")
    assert installed == {"typing-extensions": "4.16.0", "zope-interface": "7.0",
                         "torch": "2.13.0+cpu"}
    node = {"python_version": "3.11", "python_full_version": "3.11.2", "extra": ""}
    specs = ["torch==2.13.0", "Typing_Extensions>=4.10", "zope.interface==7.0.1",
             "tomli; python_version < '3.11'", "six", "torch==2.13.0+cu130",
             "optree>=0.13; extra == 'optree'", "pkg @ https://example.org/pkg.whl"]
    assert unsatisfied(specs, installed, node) == ["zope.interface==7.0.1", "six",
                                                   "torch==2.13.0+cu130",
                                                   "pkg @ https://example.org/pkg.whl"]


# --- on the local test cluster --------------------------------------------------------------

@pytest.mark.integration
def test_a_too_high_minimum_fails_clearly(testbed: Testbed, tmp_path: Path) -> None:
    playbook = tmp_path / "venv.yaml"
    playbook.write_text("- name: venv\n  hosts: node1\n  tasks:\n    - name: Python venv\n"
                        "      venv: {path: /opt/nodeprov-test/never, python_version: '3.99'}\n")
    result = CliRunner().invoke(app, ["apply", str(testbed.inventory_path), "-p", str(playbook)])
    assert result.exit_code == 1
    # python3.11 beside python3 is python3 itself: not listed twice
    assert ("node1: venv: no python >= 3.99 on the node (found: /usr/bin/python3 (3.11.2)); "
            "install a python >= 3.99 with its venv module" in " ".join(result.stdout.split()))
    assert testbed.exec("node1", "test", "-e", "/opt/nodeprov-test/never").returncode == 1


@pytest.mark.integration
def test_a_venv_path_under_a_folder_anyone_may_write_is_refused(make_testbed: MakeTestbed,
                                                                 tmp_path: Path) -> None:
    bed = make_testbed(nodes=1)
    playbook = tmp_path / "venv.yaml"
    playbook.write_text("- name: venv\n  hosts: node1\n  tasks:\n    - name: Python venv\n"
                        "      venv: {path: /tmp/nodeprov-test/venv}\n")
    result = CliRunner().invoke(app, ["apply", str(bed.inventory_path), "-p", str(playbook)])
    assert result.exit_code == 1, result.output
    assert ("node1: venv: /tmp (uid 0, mode 1777) is not root's alone: another user could "
            "replace the venv /tmp/nodeprov-test/venv" in " ".join(result.stdout.split()))
    assert bed.exec("node1", "test", "-e", "/tmp/nodeprov-test").returncode == 1
    # where only root may change each folder, the venv is planned as before
    playbook.write_text(playbook.read_text().replace("/tmp/nodeprov-test/venv",
                                                     "/opt/nodeprov-test/venv"))
    result = CliRunner().invoke(app, ["apply", str(bed.inventory_path), "-p", str(playbook),
                                      "--check"])
    assert result.exit_code == 0, result.output
    assert "create venv /opt/nodeprov-test/venv" in " ".join(result.stdout.split())
