"""What ``nvidia-smi`` says about a node's NVIDIA driver and GPUs.

The facts gatherer runs, in one round trip, plain ``nvidia-smi`` (only its header reports the
driver's maximum CUDA version; the ``cuda_version`` query field is rejected by many drivers) and
``nvidia-smi --query-gpu=index,name,uuid,memory.total,driver_version,compute_cap
--format=csv,noheader`` (drivers before 510 reject ``compute_cap``; facts.sh then asks without
it and the capability stays unknown)::

    info = parse_nvidia_smi(header_output, query_output)
    if info is None:            # no usable driver: a CPU node
        ...
    info.cuda_version, info.count, info.mig     # e.g. (12, 2), 2, True

Output that is there but not understood raises ``ValueError`` saying what is wrong and how to
fix it, so a GPU node is never mistaken for a CPU node.

MIG: ``count`` is the number of physical GPUs and ``mig`` says whether any of them has MIG mode
enabled. Under MIG a CUDA process sees one MIG device, so "one process per GPU" does not hold on
such a node; the job planner must look at ``mig`` before using ``count`` as nproc-per-node.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass

QUERY_FIELDS = "index,name,uuid,memory.total,driver_version,compute_cap"

# Printed instead of a table when there is no usable driver or no GPU; the node is a CPU node.
_NO_DRIVER_MARKERS = (
    "command not found",  # bash
    "nvidia-smi: not found",  # dash, busybox
    "Command 'nvidia-smi' not found",  # Ubuntu's command-not-found hook
    "nvidia-smi: No such file or directory",
    "NVIDIA-SMI has failed because it couldn",  # pasted copies vary the apostrophe
    "No devices were found",
)

# Driver 610 renamed "Driver Version" to "KMD Version" and "CUDA Version" to "CUDA UMD Version".
_DRIVER_RE = re.compile(r"(?:Driver|KMD) Version:\s*(\S+)")
_SMI_RE = re.compile(r"NVIDIA-SMI (\d{2,4}(?:\.\d{1,3}){1,2})\s")
_CUDA_RE = re.compile(r"CUDA (?:UMD )?Version:\s*(\S+)")
_CUDA_NUMBER_RE = re.compile(r"(\d+)\.(\d+)")
_MEMORY_RE = re.compile(r"(\d+)(?: MiB)?")
_PROC_RE = re.compile(
    r"^NVRM version: .*?Kernel Module(?: for \w+)?\s+(\d+(?:\.\d+){1,2})\s", re.MULTILINE)
_DRIVER_VERSION_RE = re.compile(r"\d{2,4}(?:\.\d{1,3}){1,2}")
_INDEX_RE = re.compile(r"\d{1,3}")
_NAME_RE = re.compile(r"[\x20-\x7e]{1,96}")  # printable ASCII: names reach messages and logs
_UUID_RE = re.compile(r"[A-Za-z0-9-]{1,80}")
_NO_MEMORY = ("[N/A]", "[Not Supported]")  # also what an unreported compute_cap prints
_CAPABILITY_RE = re.compile(r"(\d{1,2})\.(\d)")
_GPU_ROW_RE = re.compile(r"\|\s+(\d+)\s+\S")


@dataclass(frozen=True)
class Gpu:
    """One physical GPU as the query lists it; ``memory_mib`` is None where the GPU has no
    memory of its own to report (DGX Spark's GB10 prints ``[N/A]``), ``compute_capability``
    where the driver predates the ``compute_cap`` field."""

    index: int
    name: str
    uuid: str
    memory_mib: int | None
    compute_capability: tuple[int, int] | None = None


@dataclass(frozen=True)
class GpuInfo:
    """A node's driver, the newest CUDA it can run, and its physical GPUs; ``smi_version`` is
    the nvidia-smi binary's own (the banner's NVIDIA-SMI), ``capability_note`` why a GPU's
    compute capability stayed unknown (``read_gpus`` tried the CUDA probe and the PCI ids)."""

    driver_version: str
    cuda_version: tuple[int, int]
    gpus: tuple[Gpu, ...]
    mig: bool
    smi_version: str | None = None
    capability_note: str | None = None

    @property
    def count(self) -> int:
        return len(self.gpus)


def parse_nvidia_smi(header: str, query_csv: str) -> GpuInfo | None:
    """Parse both outputs; None when the node has no usable NVIDIA driver or no GPU."""
    if not header.strip() or _says_no_driver(header):
        if query_csv.strip() and not _says_no_driver(query_csv):
            raise ValueError(
                f"plain nvidia-smi printed {header.strip()[:80]!r} but the query listed "
                f"{query_csv.strip()[:80]!r}; gather the facts again")
        return None
    _refuse_nvml_failure(header)
    _refuse_nvml_failure(query_csv)
    driver_version, cuda_version = _parse_banner(header)
    gpus = _parse_query(query_csv, driver_version)
    smi = _SMI_RE.search(header)
    return GpuInfo(driver_version, cuda_version, gpus, _any_mig_enabled(header),
                   smi.group(1) if smi else None)


def failure_cause(header: str) -> str | None:
    """What a failing ``nvidia-smi`` means, in words; None when it did not fail that way.

    >>> failure_cause("Failed to initialize NVML: Driver/library version mismatch")[:28]
    'NVML/driver version mismatch'
    """
    if "NVIDIA-SMI has failed because it couldn" in header:
        return ("driver not loaded: reboot after the driver update? (nvidia-smi could not "
                "communicate with the NVIDIA driver)")
    for line in header.splitlines():
        if line.startswith("Failed to initialize NVML"):
            if "version mismatch" in line:
                return ("NVML/driver version mismatch: the driver was updated but the old "
                        "kernel module is still loaded; reboot the node")
            return f"nvidia-smi: {line.strip()[:120]} (check the driver installation)"
    if "GPU is lost" in header:
        return ("a GPU fell off the bus (nvidia-smi: GPU is lost): reboot the node; if it "
                "happens again, check its power, cooling and seating (dmesg: Xid 79)")
    if "Unable to determine the device handle" in header:
        line = next(line for line in header.splitlines() if "device handle" in line)
        return (f"nvidia-smi cannot reach a GPU ({line.strip()[:100]}): it may have fallen off "
                "the bus; see dmesg for Xid errors, then reboot the node")
    if "couldn't find libnvidia-ml.so" in header:
        return ("the driver's user-space libraries are missing (nvidia-smi found no "
                "libnvidia-ml.so): reinstall the driver")
    if "No devices were found" in header:
        return ("the NVIDIA driver sees no GPU (nvidia-smi: No devices were found): one fallen "
                "off the bus or not supported by this driver (see dmesg), or none at all")
    if "nvidia-smi timed out" in header:
        return "nvidia-smi timed out: the driver or a GPU hangs (see dmesg for Xid errors)"
    return None


def parse_proc_version(text: str) -> str | None:
    """The kernel module's version from ``/proc/driver/nvidia/version``; None when absent.

    >>> parse_proc_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  Thu Oct")
    '535.129.03'
    """
    if not text.strip():
        return None
    match = _PROC_RE.search(text)
    if match is None:
        first = text.strip().splitlines()[0]
        raise ValueError(f"cannot understand /proc/driver/nvidia/version: {first[:120]!r}")
    return match.group(1)


def _says_no_driver(text: str) -> bool:
    return any(marker in text for marker in _NO_DRIVER_MARKERS)


def _refuse_nvml_failure(text: str) -> None:
    for line in text.splitlines():
        if line.startswith("Failed to initialize NVML"):
            hint = ("reboot the node (or reload the nvidia kernel modules): the driver was "
                    "upgraded but the old kernel module is still loaded"
                    if "version mismatch" in line else "check the driver installation")
            raise ValueError(f"nvidia-smi: {line.strip()} ({hint})")


def _parse_banner(header: str) -> tuple[str, tuple[int, int]]:
    banner = next((line for line in header.splitlines() if "NVIDIA-SMI" in line), None)
    driver = _DRIVER_RE.search(banner) if banner else None
    if banner is None or driver is None:
        first = header.strip().splitlines()[0]
        raise ValueError(f"cannot understand nvidia-smi output: {first[:120]!r}")
    driver_version = driver.group(1)
    if not _DRIVER_VERSION_RE.fullmatch(driver_version):
        raise ValueError(f"nvidia-smi reports driver version {driver_version[:40]!r}; expected "
                         "digits such as 535.129.03")
    cuda = _CUDA_RE.search(banner)
    if cuda is None:
        raise ValueError(
            f"driver {driver_version} is too old to report its CUDA version (drivers before "
            "~410 do not print it) and too old for any PyTorch CUDA wheel; upgrade the driver")
    number = _CUDA_NUMBER_RE.fullmatch(cuda.group(1))
    if number is None:
        raise ValueError(
            f"driver {driver_version} reports CUDA Version {cuda.group(1)}: its CUDA library "
            "(libcuda.so) is missing or unusable; install the driver's CUDA library (Debian: "
            "libcuda1; on WSL it comes with the Windows driver, in /usr/lib/wsl/lib; vGPU host "
            "drivers ship none) so the node can run CUDA")
    return driver_version, (int(number.group(1)), int(number.group(2)))


def _parse_query(query_csv: str, driver_version: str) -> tuple[Gpu, ...]:
    lines = [line for line in query_csv.splitlines() if line.strip()]
    gpus = tuple(_parse_query_row(row, driver_version)
                 for row in csv.reader(lines, skipinitialspace=True))
    if not gpus:
        raise ValueError(f"nvidia-smi --query-gpu={QUERY_FIELDS} listed no GPU")
    if len({gpu.index for gpu in gpus}) != len(gpus):
        raise ValueError(f"nvidia-smi --query-gpu listed a GPU index twice: {query_csv!r}")
    return gpus


def _parse_query_row(row: list[str], driver_version: str) -> Gpu:
    # The node's output is untrusted: every field must have the shape nvidia-smi gives it.
    if (len(row) not in (5, 6) or not _INDEX_RE.fullmatch(row[0])
            or not _NAME_RE.fullmatch(row[1]) or not _UUID_RE.fullmatch(row[2])
            or not (_MEMORY_RE.fullmatch(row[3]) or row[3] in _NO_MEMORY)):
        raise ValueError(
            f"unexpected line from nvidia-smi --query-gpu={QUERY_FIELDS}: "
            f"{', '.join(row)[:160]!r}")
    if row[4] != driver_version:
        raise ValueError(
            f"nvidia-smi header says driver {driver_version} but the query says {row[4]}; "
            "was the driver changed while the facts were gathered? gather them again")
    # "[N/A]" (unified memory) leaves the size unknown rather than zero.
    memory = _MEMORY_RE.fullmatch(row[3])
    capability = None
    if len(row) == 6 and row[5] not in _NO_MEMORY:  # [N/A]: unknown, so no build is chosen
        match = _CAPABILITY_RE.fullmatch(row[5])
        if match is None:
            raise ValueError(f"nvidia-smi reported compute capability {row[5][:20]!r} for GPU "
                             f"{row[0]}; expected e.g. 9.0")
        capability = (int(match.group(1)), int(match.group(2)))
    return Gpu(int(row[0]), row[1], row[2], int(memory.group(1)) if memory else None,
               capability)


def _any_mig_enabled(header: str) -> bool:
    """True when a GPU's "MIG M." cell says Enabled; tables of drivers before 450 have none.

    A trailing ``*`` marks a MIG mode change that waits for a GPU reset, so the mode that will
    be in force is unknown until then: refuse rather than guess.
    """
    enabled = False
    for index, cells in _gpu_blocks(header):
        mig_mode = cells[2][-1] if len(cells) >= 3 else "N/A"
        if mig_mode.endswith("*"):
            raise ValueError(
                f"GPU {index} has a MIG mode change pending a reset ({mig_mode}); reset the "
                "GPU (nvidia-smi -r) or reboot the node, then gather facts again")
        enabled = enabled or mig_mode == "Enabled"
    return enabled


def _gpu_blocks(header: str) -> list[tuple[int, list[list[str]]]]:
    """The GPU table's blocks as (index, cells of each line), between the ``|===`` rule and the
    next box (MIG devices or processes)."""
    blocks: list[tuple[int, list[list[str]]]] = []
    in_table = False
    for line in header.splitlines():
        if line.startswith("|="):
            in_table = True
            continue
        if not in_table or line.startswith("+"):
            continue
        if not line.startswith("|") or "MIG devices:" in line or "Processes:" in line:
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        row = _GPU_ROW_RE.match(line)
        if row:
            blocks.append((int(row.group(1)), [cells]))
        elif blocks:
            blocks[-1][1].append(cells)
    return blocks
