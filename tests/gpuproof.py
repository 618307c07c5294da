"""Proof of nodeprov's GPU paths on one machine with NVIDIA GPUs, their driver and a CUDA torch,
without sshd and without internet: facts.sh and its parser on the real node (the CUDA probe
too), the torch choice for that driver and those GPUs, the verification job with one process
per local GPU (per-GPU kernel check, DDP step, NCCL all-reduce sweep, with NCCL's INFO lines as
the verification job keeps them, and ``nodeprov fabric``'s verdict on them: one node, so the
intra-node path), a forced failure (a rank given a GPU index the node does not have) and its
diagnosis::

    scripts/gpu-proof.sh --out tests/data/gpu-proof        # on the GPU machine
    scripts/gpu-proof.sh --stand-in --out /tmp/proof       # no GPU: gloo on the CPU

It writes what it read under ``OUT/<gpu>-<driver>/``: ``machine.txt``, ``facts.txt``,
``cuda-probe.txt``, ``job.txt``, ``forced-failure.txt``, and ``proof.txt``, what nodeprov makes
of them (``replay``): the tests replay every recorded folder and compare. Each step has its own
time limit (9 minutes in all, should every step hang: the device tool allows 10). Standard
library and nodeprov only on this side (the box needs no fabric); torch only in the processes it
starts.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from nodeprov.fabric import read_outputs
from nodeprov.fabric.text import fabric_text
from nodeprov.gpu import GpuInfo, read_gpus
from nodeprov.gpu.capability import CudaProbe, parse_cuda_probe
from nodeprov.job.diagnose import diagnose
from nodeprov.proof.jobfabric import NCCL_ENV
from nodeprov.proof.results import TABLE_HEADER, parse_result, result_json_in, table_rows, verdict
from nodeprov.remote.facts import parse_facts, read_script, split_sections
from nodeprov.variants.choose import NoVariant, choose_cluster_variant, known_builds
from nodeprov.variants.fit import NodeGpus

PROBE = Path(__file__).parents[1] / "nodeprov" / "nodeside" / "cuda_capability.py"
MAX_OUTPUT = 200_000  # characters kept of a run's output (its tail)
_TORCH_INFO = ("import torch; print('torch:', torch.__version__, 'cuda', torch.version.cuda); "
               "print('gpus:', torch.cuda.device_count())")
_TORCH_RE = re.compile(r"^torch: (\d+\.\d+\.\d+)(?:\+(\S+))? cuda (\S+)$", re.MULTILINE)


def run(argv: Sequence[str], env: Mapping[str, str], timeout: float, cwd: Path | None = None
        ) -> tuple[int, str]:
    """Exit status and output (stdout and stderr as written) of one command; past ``timeout``
    its whole process group is killed (torchrun's workers with it)."""
    with subprocess.Popen(list(argv), env=dict(env), cwd=cwd, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, start_new_session=True) as child:
        try:
            output, _ = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            output, _ = child.communicate()
            return 124, f"{output[-MAX_OUTPUT:]}\n(killed after {timeout} s)\n"
    return child.returncode, output[-MAX_OUTPUT:]


def machine(python: str, env: Mapping[str, str]) -> str:
    """What the machine is, as ``key: value`` lines (the choice reads the torch line back)."""
    lines = [f"kernel: {os.uname().release} {os.uname().machine}"]
    release = Path("/etc/os-release")
    if release.exists():
        names = re.findall(r'^PRETTY_NAME="?([^"\n]*)"?$', release.read_text(), re.MULTILINE)
        lines += [f"os: {name}" for name in names[:1]]
    lines.append(f"cpus: {os.cpu_count()}")
    _, torch_info = run([python, "-c", _TORCH_INFO], env, 60)
    lines += torch_info.strip().splitlines()[-2:]
    _, listed = run(["nvidia-smi", "-L"], env, 20)
    lines += [f"nvidia-smi -L: {line}" for line in listed.strip().splitlines()[:16]]
    return "\n".join(lines) + "\n"


def job_argv(python: str, nproc: int, backend: str, result: Path, max_bytes: int) -> list[str]:
    return [python, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
            "-m", "nodeprov.proof.allreduce", "--backend", backend, "--result", str(result),
            "--max-bytes", str(max_bytes), "--timeout", "60"]


def replay(folder: Path) -> str:
    """What nodeprov makes of a proof folder's recorded files: the GPUs it reads from the facts,
    the torch build it chooses for the installed torch's release, the job's table and verdict,
    and the diagnosis of the forced failure."""
    text = (folder / "facts.txt").read_text()
    sections = split_sections(text, text.split("\n@@", 2)[1].split(" ", 1)[0])
    lines = []
    try:
        parse_facts(sections)  # every fact, as a node's are read
    except ValueError as error:  # a box without iproute2, say: the GPU facts still count
        lines.append(f"facts: {error}")
    gpu, accelerators = read_gpus(sections)
    if gpu is None:
        lines.append(f"gpus: none ({accelerators.problem or 'no NVIDIA driver'})")
    else:
        lines.append(f"driver: {gpu.driver_version} (CUDA {gpu.cuda_version[0]}."
                     f"{gpu.cuda_version[1]}), mig: {gpu.mig}")
        lines += [f"gpu {one.index}: {one.name}, compute capability "
                  f"{'.'.join(map(str, one.compute_capability or ())) or 'unknown'}"
                  for one in gpu.gpus]
    lines.append(_probe_line(parse_cuda_probe((folder / "cuda-probe.txt").read_text()), gpu))
    torch = _TORCH_RE.search((folder / "machine.txt").read_text())
    if torch:
        version, installed = torch.group(1), torch.group(2) or "-"
        builds = known_builds(version)
        try:
            if gpu is None:
                raise NoVariant(f"no GPU read: {accelerators.problem or 'no NVIDIA driver'}")
            node = NodeGpus.nvidia(sections.get("arch", "").strip(), gpu.driver_version,
                                   gpu.cuda_version, ((one.name, one.compute_capability)
                                                      for one in gpu.gpus), gpu.capability_note)
            chosen = choose_cluster_variant(builds, {"this node": node}).variant \
                if builds else f"torch {version} is not in nodeprov's table"
        except NoVariant as error:
            chosen = f"refused: {error}"
        lines.append(f"torch {version}: installed {installed}, nodeprov chooses {chosen}")
    output = (folder / "job.txt").read_text()
    found = result_json_in(output)
    if found is None:
        lines.append(f"job: no result ({diagnose(output) or 'no diagnosis'})")
    else:
        result = parse_result(found)
        widths = [max(len(cell) for cell in column)
                  for column in zip(TABLE_HEADER, *table_rows(result), strict=True)]
        for row in (TABLE_HEADER, *table_rows(result)):
            lines.append("  ".join(cell.rjust(width) for cell, width in zip(row, widths,
                                                                              strict=True)))
        lines.append(verdict(result))
    report = read_outputs({"job.txt": output})  # as the job's output is read (folders
    if report is not None:                       # recorded before it kept none have none)
        lines += ["nodeprov fabric job.txt:", *(f"  {line}" for line in fabric_text(report))]
    failure = diagnose((folder / "forced-failure.txt").read_text(), node="this node")
    lines.append(f"forced failure: {failure.item}: {failure.cause} (evidence: {failure.evidence})"
                 if failure else "forced failure: no diagnosis")
    return "\n".join(lines) + "\n"


def _probe_line(probe: CudaProbe | None, gpu: GpuInfo | None) -> str:
    """What the CUDA probe said beside nvidia-smi's compute_cap."""
    if probe is None:
        return "cuda probe: not run"
    if probe.failed_call:
        return f"cuda probe: {probe.failed_call} failed ({probe.why or probe.code})"
    said = ", ".join(f"{major}.{minor}" for major, minor in probe.capabilities)
    smi = ", ".join(".".join(map(str, one.compute_capability or ("?",))) for one in gpu.gpus) \
        if gpu else "-"
    return f"cuda probe: {said} (nvidia-smi's compute_cap: {smi})"


def prove(out: Path, python: str, stand_in: bool, env: Mapping[str, str]) -> Path:
    """Run every step, write the folder, return it."""
    token = secrets.token_hex(8)
    _, facts_text = run(["sh", "-c", read_script([]), "nodeprov-facts", token], env, 60)
    gpu, _ = read_gpus(split_sections(facts_text, token))
    first = gpu.gpus[0].name if gpu and gpu.gpus else "no-gpu"
    folder = out / f"{re.sub(r'[^a-z0-9]+', '-', first.lower()).strip('-')}-" \
                   f"{gpu.driver_version if gpu else 'none'}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "facts.txt").write_text(facts_text)
    _, probe = run([python, "-I", str(PROBE)], env, 30)  # also where nvidia-smi has compute_cap
    (folder / "cuda-probe.txt").write_text(probe)
    (folder / "machine.txt").write_text(machine(python, env))
    repo = Path(__file__).parents[1]
    job_env = {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(repo),
                                                                  env.get("PYTHONPATH")]))}
    nproc = 1 if not gpu or gpu.mig else gpu.count
    backend, max_bytes = ("gloo", 2**20) if stand_in else ("nccl", 2**28)
    _, job = run(job_argv(python, nproc, backend, folder / "result.json", max_bytes),
                 {**job_env, **(NCCL_ENV if backend == "nccl" else {})}, 240, repo)
    (folder / "job.txt").write_text(job)
    (folder / "result.json").unlink(missing_ok=True)  # job.txt holds the same NODEPROV_RESULT
    # a GPU index the node does not have: one process more than GPUs (on the stand-in, the nccl
    # backend asks a CPU torch for a GPU)
    forced = job_argv(python, nproc + (0 if stand_in else 1), "nccl", folder / "forced.json",
                      max_bytes)
    _, failed = run(forced, job_env, 120, repo)
    (folder / "forced-failure.txt").write_text(failed)
    (folder / "proof.txt").write_text(replay(folder))
    return folder


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("tests/data/gpu-proof"))
    parser.add_argument("--python", default=sys.executable, help="a python with torch")
    parser.add_argument("--stand-in", action="store_true",
                        help="no GPU here: the gloo backend on the CPU (a fake nvidia-smi on PATH)")
    options = parser.parse_args(argv)
    folder = prove(options.out, options.python, options.stand_in, os.environ)
    print(f"written to {folder}:")
    print((folder / "proof.txt").read_text(), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
