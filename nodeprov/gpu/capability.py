"""A GPU's compute capability where nvidia-smi cannot report it: its ``compute_cap`` query
field came with driver R510. facts.sh then asks the CUDA driver API on the node
(``nodeside/cuda_capability.py``: ``cuInit``, ``cuDeviceGetAttribute``), and the PCI device id
is the last resort::

    >>> parse_cuda_probe("device 0 7.0\\ndevice 1 7.0\\n")
    CudaProbe(capabilities=((7, 0), (7, 0)), failed_call=None, code=None, why=None)
    >>> pci_capability("0x1db1"), pci_capability("0x0a20")
    ((7, 0), None)

The probe's output is the node's word: every line must have the probe's shape.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from nodeprov.gpu.nvidia import GpuInfo
from nodeprov.gpu.pci import PciGpu

Capability = tuple[int, int]

# PCI device id ranges of NVIDIA GPUs -> compute capability. Derived from pci.ids (pciutils/pciids,
# tests/data/gpu-node/pci-ids-nvidia.txt): every display device of one chip family falls in its
# range, whose capability is that of the family's products in NVIDIA's lists (developer.nvidia.com
# /cuda-gpus and /cuda-legacy-gpus: GK104 3.0, GK110 3.5, GK210 3.7, GM10x 5.0, GM20x 5.2, GP100
# 6.0, GP10x 6.1, GV100 7.0, TU1xx 7.5, GA100 8.0, GA10x 8.6, AD10x 8.9, GH100 9.0, GB100 10.0,
# GB110 10.3, GB10B 11.0, GB20x 12.0, GB20B (GB10) 12.1). A range never spans a device of another
# family; ids between ranges are unknown. tests/gpu/test_capability.py checks each range against
# the recorded pci.ids and against 22 real (device id, deviceQuery capability) pairs.
_PCI_RANGES: tuple[tuple[int, int, Capability], ...] = (
    (0x0FC0, 0x0FFF, (3, 0)), (0x1001, 0x100C, (3, 5)), (0x1024, 0x1024, (3, 5)),
    (0x102D, 0x102D, (3, 7)), (0x1180, 0x11FF, (3, 0)), (0x1280, 0x128C, (3, 5)),
    (0x12A0, 0x12B1, (3, 5)), (0x130B, 0x130B, (3, 5)), (0x1340, 0x139D, (5, 0)),
    (0x13AD, 0x13AE, (5, 2)), (0x13B0, 0x13BD, (5, 0)), (0x13BE, 0x1436, (5, 2)),
    (0x15C2, 0x15FF, (6, 0)), (0x1617, 0x1676, (5, 2)), (0x1725, 0x172F, (6, 0)),
    (0x174D, 0x179C, (5, 0)), (0x17C2, 0x17FD, (5, 2)), (0x1B00, 0x1D56, (6, 1)),
    (0x1D81, 0x1DF6, (7, 0)), (0x1E02, 0x1FF9, (7, 5)), (0x2080, 0x20FF, (8, 0)),
    (0x2182, 0x21D1, (7, 5)), (0x2200, 0x223F, (8, 6)), (0x2302, 0x23F0, (9, 0)),
    (0x2414, 0x25FB, (8, 6)), (0x2681, 0x28F8, (8, 9)), (0x2900, 0x29F1, (10, 0)),
    (0x2B00, 0x2B00, (11, 0)), (0x2B85, 0x2C19, (12, 0)), (0x2C31, 0x2D19, (12, 0)),
    (0x2D30, 0x2DF9, (12, 0)), (0x2E03, 0x2E2A, (12, 1)), (0x2F04, 0x2F58, (12, 0)),
    (0x3180, 0x31FE, (10, 3)),
)

# CUresult codes a failing cuInit returns on broken installs (cuda.h; numba's
# cuda/cudadrv/enums.py lists the same numbers)
CUDA_ERRORS = {
    3: "CUDA_ERROR_NOT_INITIALIZED", 34: "CUDA_ERROR_STUB_LIBRARY",
    46: "CUDA_ERROR_DEVICE_UNAVAILABLE", 100: "CUDA_ERROR_NO_DEVICE",
    101: "CUDA_ERROR_INVALID_DEVICE", 304: "CUDA_ERROR_OPERATING_SYSTEM",
    999: "CUDA_ERROR_UNKNOWN",
}
MAX_DEVICES = 64
_DEVICE_RE = re.compile(r"device (\d{1,2}) (\d{1,2})\.(\d)")
_ERROR_RE = re.compile(r"error (libcuda|cuInit|cuDeviceGetCount|cuDeviceGet|cuDeviceGetAttribute) "
                       r"([\x20-\x7e]{1,200})")


@dataclass(frozen=True)
class CudaProbe:
    """The capabilities the driver API reported, in CUDA device order (PCI bus order: the probe
    sets ``CUDA_DEVICE_ORDER=PCI_BUS_ID``), or the call that failed: ``libcuda`` (not
    loadable; ``why`` says why) or a driver API call with its CUresult ``code``."""

    capabilities: tuple[Capability, ...] = ()
    failed_call: str | None = None
    code: int | None = None
    why: str | None = None

    def failure(self, driver: str) -> str | None:
        """A driver that loads but fails, in words; None when the probe worked or libcuda was
        not there to ask (then the PCI ids are the fallback)."""
        if self.failed_call in (None, "libcuda"):
            return None
        assert self.code is not None
        name = CUDA_ERRORS.get(self.code, "CUresult")
        return (f"the NVIDIA driver {driver} is broken on this node: {self.failed_call} failed "
                f"with {name} ({self.code}); reinstall the driver or reboot (dmesg shows NVRM "
                "errors)")


def parse_cuda_probe(text: str) -> CudaProbe | None:
    """The probe's lines (None: it did not run); anything of another shape is refused."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return None
    if len(lines) == 1 and (error := _ERROR_RE.fullmatch(lines[0])):
        call, detail = error.groups()
        if call == "libcuda":
            return CudaProbe(failed_call=call, why=detail)
        if not detail.isdigit() or len(detail) > 6:
            raise ValueError(f"CUDA probe: {call} failed with {detail[:20]!r}; expected a CUresult "
                             "number")
        return CudaProbe(failed_call=call, code=int(detail))
    capabilities = []
    for ordinal, line in enumerate(lines[:MAX_DEVICES + 1]):
        match = _DEVICE_RE.fullmatch(line)
        if match is None or int(match.group(1)) != ordinal or ordinal == MAX_DEVICES:
            raise ValueError(f"unexpected line from the CUDA probe: {line[:80]!r}; expected "
                             f"'device {ordinal} <major>.<minor>'")
        capabilities.append((int(match.group(2)), int(match.group(3))))
    return CudaProbe(tuple(capabilities))


def pci_capability(device_id: str) -> Capability | None:
    """The compute capability of an NVIDIA PCI device id (``0x2330``), None when unknown."""
    number = int(device_id, 16)
    return next((capability for low, high, capability in _PCI_RANGES if low <= number <= high),
                None)


def with_capabilities(info: GpuInfo, probe: CudaProbe | None,
                      pci: Sequence[PciGpu]) -> GpuInfo:
    """``info`` with each unknown capability filled in from the probe, else from the PCI ids;
    what neither tells stays unknown, and ``capability_note`` says why. Both list GPUs in PCI
    bus order, as nvidia-smi does, so a list of the same length maps one to one; one of another
    length (MIG devices, a GPU the driver does not drive) only serves when all its entries
    agree."""
    if all(gpu.compute_capability is not None for gpu in info.gpus):
        return info
    nvidia = sorted((gpu for gpu in pci if gpu.vendor == "nvidia"), key=_slot)
    for source in (probe.capabilities if probe else (),
                   tuple(pci_capability(gpu.device_id) for gpu in nvidia)):
        chosen = _per_gpu(source, info.count)
        if chosen is not None:
            gpus = tuple(gpu if gpu.compute_capability else replace(gpu, compute_capability=found)
                         for gpu, found in zip(info.gpus, chosen, strict=True))
            return replace(info, gpus=gpus)
    return replace(info, capability_note=_why_unknown(info, probe, nvidia))


def _why_unknown(info: GpuInfo, probe: CudaProbe | None, nvidia: Sequence[PciGpu]) -> str:
    smi = info.smi_version or "?"
    older = (f", older than its driver {info.driver_version},"
             if smi != "?" and int(smi.split(".")[0]) < int(info.driver_version.split(".")[0])
             else "")
    asked = ("was not asked (no python3 on the node)" if probe is None else
             f"could not be loaded ({probe.why})" if probe.failed_call == "libcuda" else
             f"listed {len(probe.capabilities)} devices for {info.count} GPUs, not all alike")
    ids = sorted({gpu.device_id for gpu in nvidia})
    known = (f"PCI ids {', '.join(ids)} are not in nodeprov's table" if ids else
             "no NVIDIA PCI function is listed")
    return (f"nvidia-smi {smi}{older} has no compute_cap field (it came with R510), the CUDA "
            f"driver API {asked}, and {known}")


def _per_gpu(source: Sequence[Capability | None], count: int) -> tuple[Capability, ...] | None:
    known = [capability for capability in source if capability is not None]
    if not known or len(known) != len(source):
        return None
    if len(known) == count:
        return tuple(known)
    return (known[0],) * count if len(set(known)) == 1 else None


def _slot(gpu: PciGpu) -> str:
    return gpu.slot
