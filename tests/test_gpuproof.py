"""scripts/gpu-proof.sh: on a CPU stand-in (an nvidia-smi replaying a recorded 2x H100 NVL node,
the gloo backend), and the replay of every folder a GPU machine recorded under
tests/data/gpu-proof (one so far: an H200, driver 580.159.04)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nodeprov.gpu.capability import parse_cuda_probe
from nodeprov.proof.results import parse_result, result_json_in
from tests.gpu.stand_in import fake_nvidia_smi
from tests.gpuproof import replay, run

REPO = Path(__file__).parents[1]
RECORDED = sorted(path for path in (REPO / "tests" / "data" / "gpu-proof").glob("*/")
                  if path.is_dir())
FILES = {"machine.txt", "facts.txt", "cuda-probe.txt", "job.txt", "forced-failure.txt",
         "proof.txt"}


@pytest.fixture(scope="module")
def stand_in(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One stand-in run (about a minute: torchrun starts the job twice)."""
    tmp = tmp_path_factory.mktemp("proof")
    bin_dir = fake_nvidia_smi("driver-550-cuda124-2xh100-nvl", tmp / "bin")
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHON": sys.executable}
    done = subprocess.run(["bash", str(REPO / "scripts" / "gpu-proof.sh"), "--stand-in",
                           "--out", str(tmp / "out")], env=env, capture_output=True, text=True,
                          timeout=600, check=True)
    (folder,) = (tmp / "out").iterdir()
    assert done.stdout.startswith(f"written to {folder}:")
    return folder


def test_the_stand_in_proof_writes_what_it_read_and_what_nodeprov_made_of_it(
        stand_in: Path) -> None:
    assert stand_in.name == "nvidia-h100-nvl-550.54.14"
    assert {path.name for path in stand_in.iterdir()} == FILES  # <= 8: the device tool's limit
    proof = (stand_in / "proof.txt").read_text()
    assert proof == replay(stand_in)
    lines = proof.splitlines()
    assert lines[:3] == ["driver: 550.54.14 (CUDA 12.4), mig: False",
                         "gpu 0: NVIDIA H100 NVL, compute capability 9.0",
                         "gpu 1: NVIDIA H100 NVL, compute capability 9.0"]
    # the table's choice for this driver and GPU, for the release of the torch installed here
    assert any(line.startswith("torch ") and line.endswith("nodeprov chooses cu129")
               for line in lines), proof
    assert any(line.startswith("PASS: 1 node, 2 ranks (gloo)") for line in lines), proof
    assert lines[-1].startswith("forced failure: venv: the venv's torch is a CPU build"), proof


def test_recorded_proofs_replay_to_their_proof() -> None:
    if not RECORDED:
        pytest.skip("no GPU machine has run scripts/gpu-proof.sh yet (tests/data/gpu-proof/)")
    for folder in RECORDED:
        assert {path.name for path in folder.iterdir()} >= FILES, folder.name
        assert replay(folder) == (folder / "proof.txt").read_text(), folder.name
        found = result_json_in((folder / "job.txt").read_text())
        assert found is not None, folder.name
        result = parse_result(found)
        assert result.ok and result.backend == "nccl" and result.nccl, folder.name
        probe = parse_cuda_probe((folder / "cuda-probe.txt").read_text())
        assert probe is not None and probe.capabilities, folder.name
        proof = (folder / "proof.txt").read_text()
        # the CUDA driver API and nvidia-smi's compute_cap agree on the real driver
        said = re.search(r"^cuda probe: (.*) \(nvidia-smi's compute_cap: (.*)\)$", proof, re.M)
        assert said is not None and said.group(1) == said.group(2), folder.name
        assert "forced failure: job: a rank was given a GPU the node does not have" in proof
        assert "refused" not in proof, folder.name


def test_the_h200_proof_reads_the_gpu_and_chooses_the_build_it_runs() -> None:
    # recorded on a lent H200 (driver 580.159.04, torch 2.11.0+cu130): tests/data/gpu-proof
    proof = (REPO / "tests/data/gpu-proof/nvidia-h200-580.159.04/proof.txt").read_text()
    assert "driver: 580.159.04 (CUDA 13.0), mig: False" in proof
    assert "gpu 0: NVIDIA H200, compute capability 9.0" in proof
    assert "torch 2.11.0: installed cu130, nodeprov chooses cu130" in proof
    assert "PASS: 1 node, 1 rank (nccl 2.28.9)" in proof


def test_the_proof_needs_no_package_the_gpu_machine_lacks() -> None:
    # the GPU machine has torch and the repository, not nodeprov's dependencies (fabric, typer):
    # -S leaves site-packages out, so only the standard library and the repository import
    done = subprocess.run([sys.executable, "-S", "-c", "import tests.gpuproof"],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_step_past_its_limit_is_killed_with_its_children() -> None:
    started = time.monotonic()
    status, output = run(["sh", "-c", "sleep 30 & sleep 30"], os.environ, 1)
    assert status == 124 and output.endswith("(killed after 1 s)\n")
    assert time.monotonic() - started < 10


def test_nccls_lines_in_a_proofs_job_output_get_the_fabric_readers_verdict(
        tmp_path: Path) -> None:
    # no GPU here: the H200 folder's job.txt (recorded before the job kept NCCL's lines) with a
    # recorded one-node NCCL INFO log after it (nccl-1538: 8 GPUs, P2P/CUMEM), as a stand-in
    # for what scripts/gpu-proof.sh now records
    folder = tmp_path / "stand-in"
    shutil.copytree(REPO / "tests/data/gpu-proof/nvidia-h200-580.159.04", folder)
    nccl = (REPO / "tests/data/nccl-logs/nccl-1538-p2p-cumem-2.22.3.log").read_text()
    job = folder / "job.txt"
    job.write_text(job.read_text() + nccl)
    lines = replay(folder).splitlines()
    start = lines.index("nodeprov fabric job.txt:")
    assert lines[start - 1].startswith("PASS: 1 node, 1 rank (nccl 2.28.9)")
    assert lines[start + 1].startswith("  job-3bb823c0-6d27-4312-8094-1c5910bf9b51-worker-0 [")
    assert lines[start + 1].endswith("intra-node P2P"), lines[start + 1]
    assert lines[-2] == "  verdict: unknown: the log does not say which network NCCL took"
    assert lines[-1].startswith("forced failure: ")
