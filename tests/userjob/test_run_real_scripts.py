"""Public training scripts, recorded verbatim in tests/data/training-scripts (sources and
licenses in its README), through ``nodeprov run`` on the 3-node CPU testbed as a user runs them:
the exit code, each node's and each rank's, and the one line per failing node. GPU-only
scripts must say that they need a GPU these nodes lack; the others run, or fail for a reason
the line names (a module the venv lacks), and pass once it is there."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from runbed import nodeprov_run

from nodeprov.testbed.cluster import Testbed
from tests.proof.test_launch import VENV

SCRIPTS = Path(__file__).parents[1] / "data" / "training-scripts"
NEEDS_GPU = ("job: the script needs a GPU (it asks CUDA for one) and this node has none (run it "
             "on nodes with GPUs, or let it fall back to the CPU when torch.cuda.is_available() "
             "is false (backend gloo)); the job said on {first}: [rank{rank}]:AttributeError: "
             "module 'torch._C' has no attribute '_cuda_setDevice'")
PSUTIL = sorted(Path("/opt/pypi/files").glob("psutil-*.whl"))

pytestmark = pytest.mark.integration


def synced(name: str, tmp_path: Path) -> Path:
    """The recorded folder, copied where the user keeps it (the nodes get the same path)."""
    return Path(shutil.copytree(SCRIPTS / name, tmp_path / name))


def exit_codes(report: dict[str, Any]) -> tuple[dict[str, int], dict[str, int]]:
    """Each node's exit code, and each rank's."""
    nodes = report["nodes"]
    return ({name: node["exit_code"] for name, node in nodes.items()},
            {rank: end["exit_code"] for node in nodes.values()
             for rank, end in node["ranks"].items()})


@pytest.mark.parametrize(("name", "script", "args"), [
    ("ddp-tutorial-multinode", "multinode.py", ("2", "1")),  # 2 epochs, a snapshot every one
    ("gpu-test", "torch-distributed-gpu-test.py", ()),
])
def test_a_gpu_only_script_says_once_for_every_node_that_it_needs_a_gpu(
        run_bed: Testbed, tmp_path: Path, name: str, script: str, args: tuple[str, ...]) -> None:
    code, report, shown = nodeprov_run(run_bed, synced(name, tmp_path), *args, script=script)
    assert code == 1, shown
    assert exit_codes(report) == ({"node1": 1, "node2": 1, "node3": 1},
                                  {"0": 1, "1": 1, "2": 1})
    (line,) = report["diagnosis"]  # the nodes failed alike: one line names them all
    names, _, said = line.partition(": ")
    first = names.split(", ")[0]
    assert sorted(names.split(", ")) == ["node1", "node2", "node3"]
    assert said == NEEDS_GPU.format(first=first, rank=int(first.removeprefix("node")) - 1)
    assert report["verdict"] == ("FAIL: 3 of 3 nodes failed (node1, node2, node3), as said "
                                 f"above (logs: {report['log_dir']})")
    assert f"FAILED {report['diagnosis'][0]}" in shown


@pytest.mark.parametrize(("name", "script"), [("ddp-example", "example.py"),
                                              ("fsdp2", "example.py")])
def test_a_script_that_checks_for_gpus_first_ends_well_and_says_why(
        run_bed: Testbed, tmp_path: Path, name: str, script: str) -> None:
    code, report, shown = nodeprov_run(run_bed, synced(name, tmp_path), script=script)
    assert code == 0, shown
    assert report["verdict"].startswith("PASS: 3 nodes, 3 ranks: every rank exited 0 in ")
    assert exit_codes(report) == ({"node1": 0, "node2": 0, "node3": 0},
                                  {"0": 0, "1": 0, "2": 0})
    assert "[rank0]:Unable to locate sufficient 2 gpus to run this example. Exiting." in shown


@pytest.mark.skipif(not PSUTIL, reason="no psutil wheel in /opt/pypi/files to install")
def test_a_module_the_venv_lacks_is_named_and_the_script_runs_once_it_is_there(
        run_bed: Testbed, tmp_path: Path) -> None:
    code_dir = synced("main-process-first", tmp_path)
    code, report, shown = nodeprov_run(run_bed, code_dir, script="main_process_first.py")
    assert code == 1, shown
    assert exit_codes(report)[0] == {"node1": 1, "node2": 1, "node3": 1}
    (line,) = report["diagnosis"]  # the nodes failed alike: one line, one fix for all
    names = line.split(": ", 1)[0]
    assert sorted(names.split(", ")) == ["node1", "node2", "node3"]
    assert line.startswith(
        f"{names}: venv: the script imports a module that is neither in the node's venv nor "
        "beside the script (add its package to pip_packages in the inventory, then nodeprov "
        f"apply --limit {names.replace(', ', ',')} --tags venv"), line
    assert line.endswith("ModuleNotFoundError: No module named 'psutil'"), line
    pip = (f"{VENV}/bin/pip", "-q")
    try:
        for node in run_bed.nodes:
            run_bed.exec(node, *pip, "install", "--no-index", str(PSUTIL[-1]), check=True)
        code, report, shown = nodeprov_run(run_bed, code_dir, script="main_process_first.py")
        assert code == 0, shown
        assert exit_codes(report)[1] == {"0": 0, "1": 0, "2": 0}
        assert "[rank0]:Running on main rank local=0 global=0" in shown
    finally:
        for node in run_bed.nodes:
            run_bed.exec(node, *pip, "uninstall", "-y", "psutil")
