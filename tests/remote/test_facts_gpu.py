"""facts.sh on stand-ins of a GPU node: an nvidia-smi replaying a recorded output and a stub
libcuda.so.1 (tests/gpu/stand_in.py). The CUDA probe runs only where nvidia-smi rejects
compute_cap, and its answer reaches the GPUs' compute capability."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from nodeprov.remote.facts import parse_facts, read_script, split_sections
from tests.gpu.stand_in import fake_nvidia_smi, stub_libcuda


def facts_sections(bin_dir: Path, lib_dir: Path | None, **env: str) -> dict[str, str]:
    environment = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
                   "LD_LIBRARY_PATH": str(lib_dir or bin_dir), **env}
    done = subprocess.run(["sh", "-c", read_script([]), "nodeprov-facts", "T"], env=environment,
                          capture_output=True, text=True, timeout=120, check=True)
    return split_sections(done.stdout, "T")


def test_driver_470_gets_its_capabilities_from_the_cuda_driver_api(tmp_path: Path) -> None:
    bin_dir = fake_nvidia_smi("driver-470-cuda114-8xv100", tmp_path / "bin")
    sections = facts_sections(bin_dir, stub_libcuda(tmp_path / "lib"), STUB_COUNT="8")
    assert sections["cuda_probe"].split("\n")[:2] == ["device 0 7.0", "device 1 7.0"]
    facts = parse_facts(sections)
    assert facts.gpu is not None and facts.accelerators.problem is None
    assert [gpu.compute_capability for gpu in facts.gpu.gpus] == [(7, 0)] * 8


def test_a_failing_cuinit_fails_the_node_with_its_error(tmp_path: Path) -> None:
    bin_dir = fake_nvidia_smi("driver-470-cuda114-a10g", tmp_path / "bin")
    facts = parse_facts(facts_sections(bin_dir, stub_libcuda(tmp_path / "lib"),
                                       STUB_CUINIT="999"))
    assert facts.accelerators.problem is not None
    assert "cuInit failed with CUDA_ERROR_UNKNOWN (999)" in facts.accelerators.problem


def test_without_libcuda_the_capability_stays_unknown_and_says_why(tmp_path: Path) -> None:
    bin_dir = fake_nvidia_smi("driver-470-cuda114-a10g", tmp_path / "bin")
    facts = parse_facts(facts_sections(bin_dir, None))
    assert facts.gpu is not None and facts.gpu.gpus[0].compute_capability is None
    assert facts.gpu.capability_note is not None
    assert "the CUDA driver API could not be loaded (libcuda.so.1: cannot open shared object " \
        "file" in facts.gpu.capability_note


def test_drivers_with_compute_cap_do_not_run_the_probe(tmp_path: Path) -> None:
    # the probe starts a python: only nodes whose nvidia-smi lacks the field pay for it
    bin_dir = fake_nvidia_smi("driver-565-cuda127-8xh100-sxm", tmp_path / "bin")
    sections = facts_sections(bin_dir, stub_libcuda(tmp_path / "lib"), STUB_MAJOR="1",
                              ask_cuda="1")  # nor does a login environment that sets its flag
    assert sections["cuda_probe"].strip() == ""
    facts = parse_facts(sections)
    assert facts.gpu is not None
    assert [gpu.compute_capability for gpu in facts.gpu.gpus] == [(9, 0)] * 8
