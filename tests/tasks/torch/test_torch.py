"""The torch task: the variant chosen from recorded nvidia-smi outputs, idempotence on recorded
probe outputs, the wheelhouse, and real installs on the local test cluster."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from nodeprov.cli import app
from nodeprov.gpu import GpuInfo, parse_nvidia_smi, read_gpus
from nodeprov.inventory import Host
from nodeprov.remote import reader
from nodeprov.remote.facts import Facts
from nodeprov.tasks.base import Context, ParamError, Plan, Run, TaskFailed, parse_params
from nodeprov.tasks.torch import VERIFY, parse_probe, plan, probe, variant_cuda
from nodeprov.tasks.torch.params import TorchParams
from nodeprov.testbed.cluster import Testbed
from nodeprov.variants.choose import parse_torch_version_py
from nodeprov.wheels import installer
from nodeprov.wheels.installer import Install
from nodeprov.wheels.peers import Distribution, PeerDownload, PeerUpload
from nodeprov.wheels.sources import Sources
from nodeprov.wheels.wheelhouse import DownloadFailed
from tests.conftest import MakeTestbed
from tests.tasks.kit import make_facts
from tests.wheels.mirror import uv_index

DATA = Path(__file__).parents[2] / "data"
VENV = "/opt/nodeprov/venv"
PY = f"{VENV}/bin/python"
SITE = f"{VENV}/lib/python3.11/site-packages"
CFG = "home = /usr/bin\nversion = 3.11.2\n"
CPU_DISTS = ("filelock-4.0.8 fsspec-2026.9.0 jinja2-3.1.6 markupsafe-3.0.3 mpmath-1.3.0 "
             "networkx-3.6.1 numpy-2.4.6 pip-23.0.1 setuptools-84.0.0 sympy-1.14.0 "
             "torch-2.13.0+cpu typing_extensions-4.16.0")
TORCH_REQUIRES = ("filelock\ntyping-extensions>=4.10.0\nsetuptools>=77.0.3\nsympy>=1.13.3\n"
                  "networkx>=2.5.1\njinja2\nfsspec>=0.8.5\noptree>=0.13.0; extra == \"optree\"")


def gpu(name: str) -> GpuInfo:
    """A recorded nvidia-smi case (format: tests/data/nvidia-smi/README.md)."""
    text = (DATA / "nvidia-smi" / f"{name}.txt").read_text()
    body = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("# "))
    header, _, query = body.removeprefix("$ nvidia-smi\n").partition(
        "$ nvidia-smi --query-gpu=index,name,uuid,memory.total,driver_version "
        "--format=csv,noheader\n")
    info = parse_nvidia_smi(header, query)
    assert info is not None
    # These records' query sections predate compute_cap: add each model's capability from
    # NVIDIA's list (developer.nvidia.com/cuda-gpus).
    return dataclasses.replace(info, gpus=tuple(
        dataclasses.replace(gpu, compute_capability=next(
            capability for model, capability in CAPABILITY.items() if model in gpu.name))
        for gpu in info.gpus))


CAPABILITY = {"RTX 5070": (12, 0), "GB10": (12, 1), "TITAN Xp": (6, 1), "RTX 5090": (12, 0),
              "RTX 4090": (8, 9), "A100": (8, 0), "H100": (9, 0), "B200": (10, 0), "V100": (7, 0)}


def facts(name: str, gpu_info: GpuInfo | None = None, arch: str = "x86_64") -> Facts:
    return make_facts(hostname=name, gpu=gpu_info, arch=arch, python_path="/usr/bin/python3",
                      python_version="3.11.2")


def context(name: str, cluster: Mapping[str, Facts | None]) -> Context:
    hosts = {node: (Host(node, "10.0.0.1", "10.0.0.1"), node_facts)
             for node, node_facts in cluster.items()}
    own = cluster[name]
    assert own is not None
    return Context(hosts[name][0], own, hosts)


def observed(version_py: str = "", dists: str = "", requires: str = "", cfg: str = CFG,
             uv: str = "uv", env: str = "", pip_files: Mapping[str, str | None] = MappingProxyType(
                 {})) -> str:
    """What the probe prints for a venv with these files ("": none), dists and Requires-Dist,
    the uv line (installer.UV_PROBE), PIP_* lines and pip's files (pipconfig.SHELL)."""
    lines = [f"{dist}.dist-info" for dist in dists.split()]
    lines += [f"Requires-Dist: {line}" for line in requires.splitlines()]
    return (f"{uv}\nglibc 2.36\n" + "".join(f"{line}\n" for line in lines) + "\n" + env
            + reader.files_output({f"{VENV}/pyvenv.cfg": cfg or None,
                                  f"{SITE}/torch/version.py": version_py or None, **pip_files}))


def version_py(version: str, cuda: str | None) -> str:
    return f"__version__ = '{version}'\ncuda: Optional[str] = {cuda!r}\n"


INSTALLED_CPU = observed(version_py("2.13.0+cpu", None), CPU_DISTS, TORCH_REQUIRES)


def params(**values: Any) -> TorchParams:
    return parse_params(TorchParams, {"venv": VENV, "version": "2.13.0", **values})


def install_argv(plan_: Plan) -> tuple[str, ...]:
    (change,) = plan_.changes
    return next(a.argv for a in change.actions if isinstance(a, Install))


# --- the variant, from every host's facts ---------------------------------------------------

def test_cpu_cluster_installs_the_cpu_build_from_the_pytorch_index() -> None:
    cluster = {"node1": facts("node1"), "node2": facts("node2")}
    result = plan(context("node1", cluster), params(), observed(cfg=""))
    (change,) = result.changes
    assert change.summary == ("install torch==2.13.0+cpu (~200 MB) with numpy from "
                              "https://download.pytorch.org/whl/cpu with uv 0.13.9 (torch not "
                              "installed)")
    assert install_argv(result)[-7:] == (
        "--index-url", "https://download.pytorch.org/whl/cpu", "--extra-index-url",
        "https://pypi.org/simple", "--", "torch==2.13.0+cpu", "numpy")
    assert change.actions[-1] == Run((PY, "-c", VERIFY, "2.13.0", "cpu", "", "0"))
    assert ("no venv at /opt/nodeprov/venv yet (the venv task creates it, with python 3.11.2)"
            in result.notes)


def test_the_weakest_driver_holds_the_cluster_back_and_says_what_an_upgrade_unlocks() -> None:
    cluster = {"node1": facts("node1", gpu("driver-610-cuda133-kmd-umd-header")),
               "node2": facts("node2", gpu("driver-570-cuda128-a100")),
               "cpu1": facts("cpu1")}
    unlock = ("node2 holds the cluster at cu129; cu130 would need: node2: driver 570.124.06 "
              "cannot run CUDA 13.0 (needs >= 580 (CUDA 13.x minor version compatibility))")
    first = plan(context("node1", cluster), params(version="2.9.1"), observed())
    assert "torch==2.9.1+cu129" in install_argv(first)
    assert "https://download.pytorch.org/whl/cu129" in install_argv(first)
    assert unlock in first.notes and not first.warnings
    # the tests read no index: the table decides, and the plan line says so
    assert any("variants from nodeprov's table (index unreachable: " in note
               for note in first.notes)
    limiting = plan(context("node2", cluster), params(version="2.9.1"), observed())
    assert limiting.warnings == (unlock,)
    (change,) = limiting.changes
    assert change.actions[-1] == Run((PY, "-c", VERIFY, "2.9.1", "cu129", "12.9", "1"))
    # a CPU-only node in a GPU cluster gets the CPU build (jobs spanning it use gloo)
    assert "torch==2.9.1+cpu" in install_argv(plan(context("cpu1", cluster),
                                                   params(version="2.9.1"), observed()))


def test_blackwell_with_a_driver_below_580_gets_no_build_without_its_kernels() -> None:
    # 2.12's only CUDA 12 build (cu126) has no sm_120 kernels and its CUDA 13 builds need 580;
    # 2.13 also published cu129, which has them
    cluster = {"node1": facts("node1", gpu("driver-610-cuda133-kmd-umd-header")),
               "node2": facts("node2", gpu("driver-570-cuda128-a100"))}
    with pytest.raises(TaskFailed, match=r"NVIDIA GeForce RTX 5070 \.\.\. \(sm_120\) has no "
                       r"kernels in torch 2\.12 cu126.*would serve every node: torch 2\.13 "
                       r"\(cu129\)"):
        plan(context("node1", cluster), params(version="2.12.0"), observed())
    assert "torch==2.13.0+cu129" in install_argv(plan(context("node1", cluster), params(),
                                                      observed()))


def test_a_driver_too_old_for_the_release_fails_every_node_naming_it() -> None:
    cluster = {"node1": facts("node1", gpu("driver-580-cuda130-rtx5090-rtx4090")),
               "old": facts("old", gpu("driver-450-cuda110-titanxp"))}
    with pytest.raises(TaskFailed, match=r"no torch 2\.13\.0 build for this cluster: .*old: "
                                         r"driver 450\.57 cannot run CUDA 12\.6"):
        plan(context("node1", cluster), params(), observed())


def test_override_cpu_on_a_gpu_node_is_never_silent() -> None:
    cluster = {"node1": facts("node1", gpu("driver-550-cuda124-8xh100"))}
    result = plan(context("node1", cluster), params(cuda="cpu"), observed())
    assert "torch==2.13.0+cpu" in install_argv(result)
    assert result.warnings == ("GPUs here, but torch_cuda=cpu: installing the CPU build as "
                               "asked",)
    with pytest.raises(TaskFailed, match=r"torch_cuda=cu130: node1: driver 550\.90\.07 cannot "
                                         r"run CUDA 13\.0"):
        plan(context("node1", cluster), params(cuda="cu130"), observed())


def test_aarch64_gets_an_aarch64_cuda_build_or_a_clear_refusal() -> None:
    spark = {"spark": facts("spark", gpu("dgx-spark-gb10-580-aarch64"), arch="aarch64")}
    assert "torch==2.13.0+cu132" in install_argv(plan(context("spark", spark), params(),
                                                      observed()))
    with pytest.raises(TaskFailed, match=r"torch 2\.5 has no aarch64 CUDA build"):
        plan(context("spark", spark), params(version="2.5.1"), observed())


def test_a_gpu_node_with_a_broken_driver_fails_with_the_cause_and_never_gets_cpu() -> None:
    header = (DATA / "nvidia-smi" / "failed-cannot-communicate.txt").read_text()
    pci = "0000:3b:00.0 0x10de 0x1e30 0x030000"  # tests/data/gpu-node/pci-dmesg-lake10.txt
    _, broken = read_gpus({"nvidia_smi": header, "pci_devices": pci})
    cluster = {"gpu1": dataclasses.replace(facts("gpu1"), accelerators=broken),
               "node2": facts("node2", gpu("driver-550-cuda124-8xh100"))}
    with pytest.raises(TaskFailed, match=r"GPU unusable: driver not loaded: reboot after the "
                                         r"driver update\?"):
        plan(context("gpu1", cluster), params(), observed())
    healthy = plan(context("node2", cluster), params(), observed())
    assert "torch==2.13.0+cu129" in install_argv(healthy)
    assert ("gpu1 unreachable or with an unusable GPU: not considered in the choice of the "
            "torch build") in healthy.warnings
    # asked for on purpose, the CPU build goes on, with a warning
    assert "torch==2.13.0+cpu" in install_argv(plan(context("gpu1", cluster),
                                                    params(cuda="cpu"), observed()))


def test_unreachable_hosts_are_named() -> None:
    cluster: dict[str, Facts | None] = {"node1": facts("node1"), "node9": None}
    result = plan(context("node1", cluster), params(), INSTALLED_CPU)
    assert result.warnings == ("node9 unreachable or with an unusable GPU: not considered in "
                               "the choice of the torch build",)


# --- idempotence ------------------------------------------------------------------------------

def test_installed_build_is_left_alone() -> None:
    result = plan(context("node1", {"node1": facts("node1")}), params(), INSTALLED_CPU)
    assert result.in_sync
    assert result.notes[0] == f"torch 2.13.0+cpu already in {VENV}"


def test_another_build_or_a_hand_edited_torch_is_replaced() -> None:
    cluster = {"node1": facts("node1")}
    other = observed(version_py("2.13.0+cu126", "12.6"), CPU_DISTS.replace("+cpu", "+cu126"))
    result = plan(context("node1", cluster), params(), other)
    assert "(found torch 2.13.0+cu126, CUDA 12.6)" in result.changes[0].summary
    assert "--force-reinstall" not in install_argv(result)
    # version.py edited but the metadata pip trusts still says +cpu: force a reinstall of torch
    edited = observed(version_py("2.12.0+cpu", None), CPU_DISTS, TORCH_REQUIRES)
    (change,) = plan(context("node1", cluster), params(), edited).changes
    force = change.actions[0]
    assert isinstance(force, Run) and force.argv[-2:] == ("--", "torch==2.13.0+cpu")
    assert force.argv[:2] == ("sh", "-c") and "reinstall" in force.argv  # uv: --reinstall
    no_uv = observed(version_py("2.12.0+cpu", None), CPU_DISTS, TORCH_REQUIRES, uv="no-uv")
    (change,) = plan(context("node1", cluster), params(), no_uv).changes
    force = change.actions[0]
    assert isinstance(force, Install) and force.argv[4:7] == ("", VENV, "reinstall")  # pip
    # uv was pushed (by the venv task, in this round trip) and did not run there: pip, and why
    failed = observed(version_py("2.12.0+cpu", None), CPU_DISTS, TORCH_REQUIRES,
                      uv="uv-failed sh: 1: /var/cache/nodeprov/uv-0.13.9/uv: Permission denied")
    failed_plan = plan(context("node1", cluster), params(), failed)
    assert failed_plan.warnings[-1] == (
        "installed with pip: uv failed: sh: 1: /var/cache/nodeprov/uv-0.13.9/uv: Permission "
        f"denied (uv is not tried again here until {installer.UV_FAILED} is removed)")
    (change,) = failed_plan.changes
    force = change.actions[0]
    assert isinstance(force, Install) and force.argv[4] == ""  # pip only
    assert (" with pip (uv failed: sh: 1: /var/cache/nodeprov/uv-0.13.9/uv: Permission denied;"
            f" remove {installer.UV_FAILED} to try uv again)") in change.summary
    mangled = observed("__version__ = (", CPU_DISTS, TORCH_REQUIRES)
    assert "torch not installed" in plan(context("node1", cluster), params(),
                                         mangled).changes[0].summary


def test_extra_packages_install_once_and_a_lost_dependency_is_repaired() -> None:
    cluster = {"node1": facts("node1")}
    extras = params(packages=["six==1.17.0", "Jinja2>=3", "tomli; python_version < '3.11'"])
    result = plan(context("node1", cluster), extras, INSTALLED_CPU)
    assert result.changes[0].summary == (f"install six==1.17.0 into {VENV} from "
                                         "https://download.pytorch.org/whl/cpu with uv 0.13.9")
    assert install_argv(result)[-3:] == ("--", "torch==2.13.0+cpu", "six==1.17.0")
    done = observed(version_py("2.13.0+cpu", None), CPU_DISTS + " six-1.17.0", TORCH_REQUIRES)
    assert plan(context("node1", cluster), extras, done).notes[1:2] == (
        "4 extra packages already satisfied",)  # and numpy
    without_numpy = observed(version_py("2.13.0+cpu", None), CPU_DISTS.replace("numpy", "x"),
                             TORCH_REQUIRES)
    assert plan(context("node1", cluster), params(), without_numpy).changes[0].summary == (
        f"install numpy into {VENV} from https://download.pytorch.org/whl/cpu with uv 0.13.9")
    assert plan(context("node1", cluster), params(numpy=False), without_numpy).in_sync
    assert params(version="2.2.2").wanted_packages == ("numpy<2",)  # built against numpy 1
    lost = observed(version_py("2.13.0+cpu", None), CPU_DISTS.replace("sympy-1.14.0", ""),
                    TORCH_REQUIRES)
    assert "install sympy>=1.13.3 into" in plan(context("node1", cluster), params(),
                                                lost).changes[0].summary


def test_once_uv_could_not_be_had_this_run_the_plans_say_pip_and_why(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    distribution = Distribution()
    cluster = {"node1": facts("node1")}
    ctx = dataclasses.replace(context("node1", cluster), states={Distribution: distribution})
    mirror = params(index_url=f"file://{tmp_path}/no-index/simple")
    (change,) = plan(ctx, mirror, observed(uv="no-uv glibc 2.36")).changes
    (copy,) = [a for a in change.actions if isinstance(a, PeerUpload)]
    assert copy.fill is not None and copy.fill.sources == mirror.sources
    with pytest.raises(DownloadFailed):  # what the venv task's copy met, earlier in the run
        distribution.here.fill(copy.local_path, copy.fill)
    (change,) = plan(ctx, mirror, observed(uv="no-uv glibc 2.36")).changes
    assert not [a for a in change.actions if isinstance(a, PeerUpload)]
    assert " with pip (uv 0.13.9 could not be had: this machine could not download it from " \
           f"file://{tmp_path}/no-index/simple: " in change.summary
    assert next(a for a in change.actions if isinstance(a, Install)).argv[4] == ""  # pip


def test_mirrors_replace_the_default_sources() -> None:
    result = plan(context("node1", {"node1": facts("node1")}),
                  params(index_url="file:///opt/pypi/simple", find_links=["/opt/wheels"],
                         extra_index_urls=["https://mirror/simple"]), observed())
    argv = install_argv(result)
    assert "download.pytorch.org" not in " ".join(argv)
    assert argv[argv.index("--index-url"):] == (
        "--index-url", "file:///opt/pypi/simple", "--extra-index-url", "https://mirror/simple",
        "--find-links", "/opt/wheels", "--", "torch==2.13.0+cpu", "numpy")
    assert result.changes[0].summary.startswith("install torch==2.13.0+cpu (~200 MB) with numpy "
                                                "from /opt/wheels, file:///opt/pypi/simple")
    secret = plan(context("node1", {"node1": facts("node1")}),
                  params(index_url="https://ci:s3cret@mirror/simple"), observed())
    assert "https://ci:***@mirror/simple" in secret.changes[0].summary
    assert "s3cret" not in secret.changes[0].summary + str(
        [a.source + a.hint for a in secret.changes[0].actions if isinstance(a, Install)])


def test_the_nodes_own_pip_configuration_is_used_when_the_inventory_sets_none() -> None:
    mirror = observed(pip_files={"/etc/xdg/pip/pip.conf": None, "/etc/pip.conf": (
        DATA / "pip-conf" / "naming.conf").read_text()})
    result = plan(context("node1", {"node1": facts("node1")}), params(), mirror)
    (change,) = result.changes
    assert change.summary == (
        "install torch==2.13.0+cpu (~200 MB) with numpy from https://download.zope.org/ppix "
        "(the node's pip configuration (/etc/pip.conf)) with uv 0.13.9 (torch not installed)")
    install = next(a for a in change.actions if isinstance(a, Install))
    assert install.argv[-5:] == ("--index-url", "https://download.zope.org/ppix", "--",
                                 "torch==2.13.0+cpu", "numpy")
    assert install.source == ("https://download.zope.org/ppix (the node's pip configuration "
                              "(/etc/pip.conf))")
    assert install.hint == ("set pip_index_url or pip_find_links to an index it reaches, or "
                            "wheelhouse: true")
    # the inventory's pip_* variables win over the node's files
    ours = plan(context("node1", {"node1": facts("node1")}), params(find_links=["/w"]), mirror)
    assert "zope" not in str(ours.changes[0])
    broken = observed(pip_files={"/etc/pip.conf": "index-url = http://x\n"})
    with pytest.raises(TaskFailed, match="^/etc/pip.conf is not a pip configuration file"):
        plan(context("node1", {"node1": facts("node1")}), params(), broken)


def test_uv_is_given_the_ca_bundle_the_nodes_pip_verifies_with() -> None:
    # a site mirror whose CA pip.conf names: uv, which reads no pip.conf, gets it too
    site = observed(pip_files={"/etc/pip.conf": "[global]\ncert = /etc/site/ca.pem\n"})
    result = plan(context("node1", {"node1": facts("node1")}),
                  params(index_url="https://mirror.site/simple"), site)
    install = next(a for a in result.changes[0].actions if isinstance(a, Install))
    assert install.argv[9:12] == ("/etc/site/ca.pem", f"{install.venv}.uv-certs.pem",
                                  "--index-url")  # with the system store and pip's roots
    plain = plan(context("node1", {"node1": facts("node1")}),
                 params(index_url="https://mirror.site/simple"), observed())
    install = next(a for a in plain.changes[0].actions if isinstance(a, Install))
    assert install.argv[9:12:2] == ("", "--index-url")  # the system store (installer)


def test_params_are_checked() -> None:
    with pytest.raises(ParamError, match="torch comes from version and cuda"):
        params(packages=["Torch>=2"])
    with pytest.raises(ParamError, match="is not a pip requirement"):
        params(packages=["six=1"])
    with pytest.raises(ParamError, match="a wheel needs a full torch version"):
        params(version="2.13")
    with pytest.raises(ParamError, match="not a torch variant"):
        params(cuda="rocm6")
    with pytest.raises(ParamError, match="may not be empty or start with '-'"):
        params(find_links=["--trusted-host=evil"])


def test_probe_output_parsing() -> None:
    text = (DATA / "torch-version" / "torch-2.7.1+cu126.version.py.txt").read_text()
    state = parse_probe(observed(text, "torch-2.7.1+cu126 nvidia_nccl_cu12-2.26.2"))
    assert (state.python, state.glibc) == ("3.11.2", (2, 36))
    assert (state.torch_version, state.torch_cuda) == ("2.7.1+cu126", "12.6")
    assert state.installed == {"torch": "2.7.1+cu126", "nvidia-nccl-cu12": "2.26.2"}
    assert variant_cuda("cu126") == "12.6" and variant_cuda("cpu") is None


def test_the_probe_reads_a_venv_as_parse_probe_expects(tmp_path: Path) -> None:
    site = tmp_path / "lib" / "python3.11" / "site-packages"
    (site / "torch").mkdir(parents=True)
    (site / "torch" / "version.py").write_text(version_py("2.13.0+cpu", None))
    (site / "torch-2.13.0+cpu.dist-info").mkdir()
    # the headers end at the first empty line: a description's lines are not requirements
    (site / "torch-2.13.0+cpu.dist-info" / "METADATA").write_text(
        "Name: torch\nRequires-Dist: filelock\nRequires-Dist: sympy>=1.13.3\n\n"
        "Requires-Dist: not-a-header\n")
    (site / "six-1.17.0.dist-info").mkdir()
    (tmp_path / "pyvenv.cfg").write_text(CFG)
    params = parse_params(TorchParams, {"venv": str(tmp_path)})
    done = subprocess.run(probe(params).argv, capture_output=True, text=True, check=True)
    state = parse_probe(done.stdout)
    assert (state.python, state.torch_version, state.torch_cuda) == ("3.11.2", "2.13.0+cpu", None)
    assert state.torch_requires == ("filelock", "sympy>=1.13.3")
    assert state.installed == {"torch": "2.13.0+cpu", "six": "1.17.0"}
    empty = parse_probe(subprocess.run(probe(parse_params(TorchParams, {
        "venv": str(tmp_path / "none")})).argv, capture_output=True, text=True).stdout)
    assert (empty.python, empty.torch_version, empty.installed) == (None, None, {})


# --- the wheelhouse ---------------------------------------------------------------------------

def test_wheelhouse_plan_fills_it_here_sends_it_and_installs_from_it_alone(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    mirror = observed(pip_files={"/etc/pip.conf": "[global]\nindex-url = http://10.0.0.1/s\n"})
    result = plan(context("node1", {"node1": facts("node1")}),
                  params(wheelhouse=True, packages=["six"]), mirror)
    local = str(tmp_path / "nodeprov/wheelhouse/cpu/torch-2.13.0-cp311-glibc2.36-x86_64")
    remote = "/var/cache/nodeprov/wheelhouse/cpu-torch-2.13.0"
    copy, install, cleanup, verify = result.changes[0].actions
    assert isinstance(copy, PeerUpload) and (copy.local_path, copy.remote_path) == (local, remote)
    assert copy.fill is not None and copy.fill.specs == ("torch==2.13.0+cpu", "six", "numpy")
    # filled from the inventory's sources, else this machine's pip configuration, else these
    assert copy.fill.sources == Sources() and copy.fill.default == (
        "--index-url", "https://download.pytorch.org/whl/cpu", "--extra-index-url",
        "https://pypi.org/simple")
    assert "--python-version" in copy.fill.platform
    assert "manylinux_2_28_x86_64" in copy.fill.platform
    # where this machine cannot fill it: the node's own sources, said in a warning
    assert copy.optional == ("the node installs from http://10.0.0.1/s (the node's pip "
                             "configuration (/etc/pip.conf)) itself")
    # root's copy of the upload, each file checked against this machine's (wheels.staged)
    assert copy.staged == f"{remote}.root"
    assert isinstance(install, Install) and install.argv[8] == copy.staged  # only these
    assert install.argv[-6:] == ("--index-url", "http://10.0.0.1/s", "--", "torch==2.13.0+cpu",
                                 "six", "numpy")
    assert install.hint == "set pip_index_url or pip_find_links to a mirror this machine reaches"
    assert cleanup == Run(("rm", "-rf", "--", remote, copy.staged)) and isinstance(verify, Run)
    assert not (tmp_path / "nodeprov").exists()  # planning downloads nothing


def test_wheelhouse_plans_name_one_seed_and_the_others_fetch_from_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    distribution = Distribution()
    cluster = {name: facts(name) for name in ("node1", "node2")}
    wanted = params(wheelhouse=True, subnet="192.0.2.0/24")  # the recorded eth0's subnet
    seeds: dict[type, object] = {Distribution: distribution}
    plans = {name: plan(dataclasses.replace(context(name, cluster), states=seeds),
                        wanted, observed()) for name in cluster}
    assert ", uploaded from this machine) with uv" in plans["node1"].changes[0].summary
    assert (", from node1 over the node subnet) with uv" in plans["node2"].changes[0].summary)
    uploads = [next(a for a in p.changes[0].actions if isinstance(a, PeerUpload))
               for p in plans.values()]
    assert all(isinstance(a, PeerUpload) and a.address == "192.0.2.2" for a in uploads)
    assert uploads[0].key == uploads[1].key  # one wheel set
    other = params(wheelhouse=True, subnet="192.0.2.0/24", packages=["six"])
    assert "uploaded from this machine" in plan(dataclasses.replace(
        context("node2", cluster), states=seeds), other,
        observed()).changes[0].summary  # another wheel set: node2 seeds it


def test_download_once_plans_one_node_downloading_for_all_from_the_nodes_sources() -> None:
    distribution = Distribution()
    cluster = {name: facts(name) for name in ("node1", "node2")}
    wanted = params(download_once=True, subnet="192.0.2.0/24", index_url="https://mirror/simple")
    seeds: dict[type, object] = {Distribution: distribution}
    plans = {name: plan(dataclasses.replace(context(name, cluster), states=seeds),
                        wanted, observed()) for name in cluster}
    assert ("from https://mirror/simple (downloaded by the node itself, for the other nodes "
            "too) with uv") in plans["node1"].changes[0].summary
    assert ("(downloaded once by node1, fetched over the node subnet) with uv"
            in plans["node2"].changes[0].summary)
    remote = "/var/cache/nodeprov/wheelhouse/cpu-torch-2.13.0"
    mkdir, download, install, cleanup, _ = plans["node2"].changes[0].actions
    assert isinstance(download, PeerDownload) and download.remote_path == remote
    assert download.argv[:8] == ("/opt/nodeprov/venv/bin/python", "-m", "pip", "download",
                                 "--dest", remote, "--no-cache-dir",
                                 "--disable-pip-version-check")
    assert download.argv[-5:] == ("--index-url", "https://mirror/simple", "--",
                                  "torch==2.13.0+cpu", "numpy")
    # what this machine resolves, to check every copy against the index's hashes
    assert download.wanted is not None and download.wanted.specs == ("torch==2.13.0+cpu",
                                                                      "numpy")
    assert download.wanted.sources == Sources(index_url="https://mirror/simple")
    assert "could the node not reach https://mirror/simple?" in download.hint
    assert not any(isinstance(a, PeerUpload) for a in plans["node2"].changes[0].actions)
    # root's own folder from birth: nothing travels by SFTP, so the login user never writes it
    assert isinstance(mkdir, Run) and mkdir.argv[2:] == (installer.MAKE_ROOT_DIR,
                                                         "nodeprov-mkdir", remote)
    assert isinstance(install, Install) and install.argv[8] == remote
    assert cleanup == Run(("rm", "-rf", "--", remote))
    alone = plan(context("node1", cluster), wanted, observed())  # no run to share it with
    assert "(downloaded by the node itself) with uv" in alone.changes[0].summary
    with pytest.raises(ValueError, match="set wheelhouse or download_once, not both"):
        params(download_once=True, wheelhouse=True)


def test_verify_script_on_this_machines_torch() -> None:
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("torch is not installed here")
    found, cuda = parse_torch_version_py(
        (Path(spec.submodule_search_locations[0]) / "version.py").read_text())
    assert found is not None
    version, _, variant = found.partition("+")
    ok = subprocess.run([sys.executable, "-W", "ignore", "-c", VERIFY, version, variant or "cpu",
                         cuda or "", "0"], capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout.startswith(f"torch {found} ")
    wrong = subprocess.run([sys.executable, "-W", "ignore", "-c", VERIFY, "2.0.0", "cu118",
                            "11.8", "2"], capture_output=True, text=True)
    assert wrong.returncode == 1
    assert f"imports torch {found} (CUDA {cuda}), expected 2.0.0+cu118" in wrong.stderr
    assert "torch.cuda.is_available() is False on a node with 2 GPUs" in wrong.stderr


# --- on the local test cluster (offline nodes; /opt/wheels and /opt/pypi are local mirrors) ----

PLAYBOOK = """\
- name: Python with torch
  hosts: all
  tasks:
    - name: Python venv
      venv: {path: "{{ venv_path }}", python_version: "{{ python_version }}",
             index_url: "{{ pip_index_url }}", extra_index_urls: "{{ pip_extra_index_url }}",
             find_links: "{{ pip_find_links }}"}
    - name: torch
      torch:
        venv: "{{ venv_path }}"
        version: "{{ torch_version }}"
        cuda: "{{ torch_cuda }}"
        packages: "{{ pip_packages }}"
        index_url: "{{ pip_index_url }}"
        extra_index_urls: "{{ pip_extra_index_url }}"
        find_links: "{{ pip_find_links }}"
        wheelhouse: "{{ wheelhouse }}"
"""
TEST_VENV = "/opt/nodeprov-test/venv"
NODES = ("node1", "node2")


def mirror() -> dict[str, Any]:
    """The variables naming the folder mirror: torch and its dependencies (which the nodes see
    too), and uv's wheel (which only this machine reads: the nodes get uv from it)."""
    return {"venv_path": TEST_VENV, "torch_version": "2.13.0", "pip_find_links": ["/opt/wheels"],
            "pip_index_url": "file:///opt/pypi/simple", "pip_extra_index_url": [uv_index()]}


def mirror_words() -> str:
    """How the plan lines name that mirror."""
    return f"/opt/wheels, file:///opt/pypi/simple, {uv_index()}"


def write_files(testbed: Testbed, folder: Path, **variables: Any) -> list[str]:
    """An inventory with ``variables`` added and the playbook: ``apply`` arguments."""
    inventory = yaml.safe_load(testbed.inventory_path.read_text())
    inventory["all"]["vars"].update(variables)
    (folder / "inventory.yaml").write_text(yaml.safe_dump(inventory))
    (folder / "site.yaml").write_text(PLAYBOOK)
    return [str(folder / "inventory.yaml"), "-p", str(folder / "site.yaml")]


def apply(*args: str) -> tuple[int, str]:
    """Exit code and output with line wrapping undone."""
    result = CliRunner().invoke(app, ["apply", *args])
    return result.exit_code, " ".join(result.stdout.split())


def torch_on(testbed: Testbed, node: str) -> str:
    shown = testbed.exec(node, f"{TEST_VENV}/bin/python", "-W", "ignore", "-c",
                         "import torch; print(torch.__version__)")
    return shown.stdout.strip() or shown.stderr


@dataclasses.dataclass(frozen=True)
class Installed:
    testbed: Testbed
    args: list[str]
    check: tuple[int, str]
    first: tuple[int, str]
    seconds: float


@pytest.fixture(scope="module")
def installed(testbed: Testbed, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    """torch installed once, from the local mirrors, into node1 and node2 of the shared
    testbed (about 1 GB each); the tests of this module share it, and it is removed after."""
    args = [*write_files(testbed, tmp_path_factory.mktemp("torch"), **mirror()),
            "--limit", ",".join(NODES)]
    try:
        check = apply(*args, "--check")
        started = time.monotonic()
        first = apply(*args)
        yield Installed(testbed, args, check, first, time.monotonic() - started)
    finally:
        for node in NODES:
            testbed.exec(node, "rm", "-rf", "--", str(Path(TEST_VENV).parent))


@pytest.mark.integration
def test_four_steps_from_a_local_mirror(installed: Installed, tmp_path: Path) -> None:
    code, out = installed.check
    assert code == 0 and "2 hosts, 4 tasks would change" in out
    assert ("node1 | torch | changed | install torch==2.13.0+cpu (~200 MB) with numpy from "
            f"{mirror_words()} with uv {installer.UV_VERSION} (torch not installed)") in out, out
    code, out = installed.first
    assert code == 0 and "2 hosts, 4 tasks changed, 0 hosts failed" in out, out
    for node in NODES:  # the bytes the install wrote, counted on the node as it went
        assert f"{node} | torch: install torch==2.13.0+cpu and 1 more | size not known " \
               "beforehand" in out
        wrote = re.search(rf"{node} \| torch: install torch==2\.13\.0\+cpu and 1 more \| wrote "
                          r"([\d.]+) (kB|MB|GB) in [\d.]+ s, [\d.]+ (?:kB|MB|GB)/s", out)
        assert wrote, out
        counted = float(wrote[1]) * {"kB": 1e3, "MB": 1e6, "GB": 1e9}[wrote[2]]
        torch_dir, venv = (int(installed.testbed.exec(node, "du", "-sb", folder).stdout.split()[0])
                           for folder in (f"{TEST_VENV}/lib/python3.11/site-packages/torch",
                                          TEST_VENV))
        assert torch_dir * 0.99 <= counted <= venv * 2.2, (torch_dir, counted, venv)
        print(f"{wrote[0]} (du -sb: torch {torch_dir / 1e6:.1f} MB, venv {venv / 1e6:.1f} MB)")
    started = time.monotonic()
    code, out = apply(*installed.args, "--json", str(tmp_path / "again.json"))
    again = time.monotonic() - started
    assert code == 0 and "2 hosts, 0 tasks changed" in out and "| wrote " not in out
    hosts = json.loads((tmp_path / "again.json").read_text())["hosts"]
    assert {name: host["round_trips"] for name, host in hosts.items()} == {"node1": 1, "node2": 1}
    code, out = apply(*installed.args, "--check")
    assert code == 0 and "0 tasks would change" in out
    print(f"first install on 2 nodes: {installed.seconds:.0f}s, no-op re-run: {again:.1f}s")


@pytest.mark.integration
def test_every_node_imports_the_cpu_build(installed: Installed) -> None:
    for node in NODES:
        assert torch_on(installed.testbed, node) == "2.13.0+cpu"
    assert installed.testbed.exec("node3", "test", "-e", TEST_VENV).returncode == 1  # --limit


@pytest.mark.integration
def test_an_extra_package_installs_once(installed: Installed, tmp_path: Path) -> None:
    args = [*write_files(installed.testbed, tmp_path, **mirror(), pip_packages=["six==1.17.0"]),
            "--limit", ",".join(NODES)]
    code, out = apply(*args)
    assert code == 0 and (f"node1 | torch | changed | install six==1.17.0 into {TEST_VENV} from "
                          f"{mirror_words()} with uv") in out
    code, out = apply(*args)
    assert code == 0 and "2 hosts, 0 tasks changed" in out
    assert installed.testbed.exec("node2", f"{TEST_VENV}/bin/python", "-c",
                                  "import six; print(six.__version__)").stdout == "1.17.0\n"


@pytest.mark.integration
def test_a_replaced_torch_is_detected_and_repaired(installed: Installed) -> None:
    version_py = f"{TEST_VENV}/lib/python3.11/site-packages/torch/version.py"
    edit = ["sed", "-i", "-e", "s/^__version__ = .*/__version__ = '2.12.0+cu126'/", "-e",
            "s/^cuda: .*/cuda: Optional[str] = '12.6'/", version_py]
    assert installed.testbed.exec("node2", *edit).returncode == 0
    code, out = apply(*installed.args, "--check")
    assert code == 0 and "1 tasks would change" in out
    assert "node2 | torch | changed | install torch==2.13.0+cpu" in out
    assert "(found torch 2.12.0+cu126, CUDA 12.6)" in out
    code, out = apply(*installed.args)
    assert code == 0 and "1 tasks changed" in out
    assert torch_on(installed.testbed, "node2") == "2.13.0+cpu"
    in_step = "0 tasks would change, 0 hosts failed PASS: "  # the recap, then the verdict
    assert in_step in apply(*installed.args, "--check")[1]


@pytest.mark.integration
def test_wheelhouse_downloads_once_and_pushes_to_offline_nodes(
        make_testbed: MakeTestbed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = make_testbed(nodes=2)
    for node in cluster.nodes:  # the nodes see no wheel anywhere: only what is pushed
        for folder in ("/opt/wheels", "/opt/pypi", "/opt/pypi-more"):
            assert cluster.exec(node, "mount", "-t", "tmpfs", "none", folder).returncode == 0
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    args = write_files(cluster, tmp_path, **mirror(), wheelhouse=True)
    code, out = apply(*args, "--check")
    assert code == 0 and ("install torch==2.13.0+cpu (~200 MB) with numpy from this machine's "
                          "wheelhouse") in out
    assert not (tmp_path / "cache").exists()  # --check downloads nothing
    started = time.monotonic()
    code, out = apply(*args)
    seconds = time.monotonic() - started
    assert code == 0 and "2 hosts, 4 tasks changed, 0 hosts failed" in out, out
    (log,) = (tmp_path / "cache" / "nodeprov" / "wheelhouse" / "cpu").glob("*/.fetch.log")
    assert log.read_text().count(" pip exited 0 ") == 1  # one download for two nodes
    for node in cluster.nodes:
        assert torch_on(cluster, node) == "2.13.0+cpu"
        assert cluster.exec(node, "ls", "/var/cache/nodeprov/wheelhouse").stdout == ""
    assert "0 tasks changed, 0 hosts failed PASS: " in apply(*args)[1]
    assert "0 tasks would change, 0 hosts failed PASS: " in apply(*args, "--check")[1]
    assert log.read_text().count(" pip exited 0 ") == 1
    print(f"wheelhouse: download once + push + install on 2 nodes: {seconds:.0f}s")


@pytest.mark.integration
def test_nodes_install_from_their_own_pip_conf_and_an_unreachable_index_is_one_line(
        testbed: Testbed, tmp_path: Path) -> None:
    venv = "/opt/nodeprov-pipconf/venv"
    confs = {"node3": "[global]\nindex-url = file:///opt/pypi/simple\nfind-links = /opt/wheels\n",
             # the node's own loopback, where nothing listens: refused at once, nothing leaves
             "node1": "[global]\nindex-url = http://127.0.0.1:9/simple\n"}
    args = [*write_files(testbed, tmp_path, venv_path=venv, torch_version="2.13.0"),
            "--limit", ",".join(confs)]
    try:
        for node, text in confs.items():
            testbed.exec(node, "sh", "-c", 'cat > /etc/pip.conf', input=text, check=True)
        result = CliRunner().invoke(app, ["apply", *args], env={"COLUMNS": "1000"})
        code, out, lines = result.exit_code, " ".join(result.stdout.split()), \
            result.stdout.splitlines()
        assert code == 1, out
        assert ("node3 | torch | changed | install torch==2.13.0+cpu (~200 MB) with numpy from "
                "/opt/wheels, file:///opt/pypi/simple (the node's pip configuration "
                f"(/etc/pip.conf)) with uv {installer.UV_VERSION} (torch not installed)") in out
        failed = next(line for line in lines if line.startswith("FAILED node1: torch: "))
        # node, item, index tried, the variables that fix it: under 200 characters
        assert failed.startswith("FAILED node1: torch: could not install torch==2.13.0+cpu and "
                                 "1 more from http://127.0.0.1:9/simple (the node's pip ")
        assert failed.endswith(" (set pip_index_url or pip_find_links to an index it reaches, "
                               "or wheelhouse: true)")
        assert len(failed.removeprefix("FAILED ")) < 200
        assert "Connection refused" in out  # uv's (then pip's) own words follow
        assert out.count("FAILED node1: torch: ") == 1 and "FAILED node3" not in out, out
        shown = testbed.exec("node3", f"{venv}/bin/python", "-W", "ignore", "-c",
                             "import torch; print(torch.__version__)")
        assert shown.stdout == "2.13.0+cpu\n", shown.stderr
        assert testbed.exec("node3", f"{venv}/bin/pip", "--version").returncode == 0
        assert testbed.exec("node3", "test", "-x", f"{venv}/bin/torchrun").returncode == 0
    finally:
        for node in confs:
            testbed.exec(node, "rm", "-rf", "--", "/etc/pip.conf", str(Path(venv).parent))
