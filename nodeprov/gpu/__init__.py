"""A node's GPUs, from every source ``facts.sh`` reads, so a GPU node is never taken for a CPU
node: ``nvidia-smi`` (``nvidia``), the PCI bus (``pci``), ``/proc/driver/nvidia/version`` and
the installed ROCm (``amd``)::

    nvidia_info, accelerators = read_gpus(sections)
    accelerators.problem   # "driver not loaded: reboot after the driver update? (...)" or None

A GPU that is there (on the PCI bus, or a loaded NVIDIA kernel module) but cannot be used makes
``problem`` say why; the torch task fails on that node with it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from nodeprov.gpu.amd import parse_rocm_version
from nodeprov.gpu.nvidia import (
    QUERY_FIELDS,
    Gpu,
    GpuInfo,
    failure_cause,
    parse_nvidia_smi,
    parse_proc_version,
)
from nodeprov.gpu.pci import PciGpu, parse_pci_gpus

__all__ = ["QUERY_FIELDS", "Accelerators", "Gpu", "GpuInfo", "PciGpu", "parse_nvidia_smi",
           "read_gpus"]


@dataclass(frozen=True)
class Accelerators:
    """GPUs seen on the PCI bus, the NVIDIA kernel module's version, the installed ROCm, and
    why a GPU that is there cannot be used (None: nothing wrong)."""

    pci: tuple[PciGpu, ...] = ()
    kernel_module: str | None = None
    rocm: tuple[int, ...] | None = None
    problem: str | None = None

    def vendor(self, name: str) -> tuple[PciGpu, ...]:
        return tuple(gpu for gpu in self.pci if gpu.vendor == name)


def read_gpus(sections: Mapping[str, str]) -> tuple[GpuInfo | None, Accelerators]:
    """The NVIDIA driver's view (None: no usable driver) and everything else about the GPUs."""
    def text(name: str) -> str:
        return sections.get(name, "").strip()

    pci = parse_pci_gpus(text("pci_devices"))
    module = parse_proc_version(text("nvidia_proc"))
    header = text("nvidia_smi")
    jetson = jetson_problem(text("tegra"), header, text("kernel"))
    if jetson:
        return None, Accelerators(pci, module, problem=jetson)
    nvidia_there = module is not None or any(gpu.vendor == "nvidia" for gpu in pci)
    cause = failure_cause(header)
    if cause is not None:
        if nvidia_there:
            return None, Accelerators(pci, module, problem=cause)
        return None, Accelerators(pci)  # a driver without a GPU: a CPU node
    info = parse_nvidia_smi(header, text("nvidia_query"))
    rocm = parse_rocm_version(text("rocm_version"), text("amd_smi"))
    problem = _problem(info, pci, module, rocm, header)
    return info, Accelerators(pci, module, rocm, problem)


def jetson_problem(tegra_release: str, header: str, kernel: str) -> str | None:
    """Why PyTorch's wheels cannot serve a Jetson before Thor (L4T R36 and older: Orin, Xavier),
    None for any other node: their aarch64 wheels are SBSA (server) builds; Thor's L4T R38+ is
    SBSA and takes them. A Jetson shows in /etc/nv_tegra_release (first line), its GPU's name
    in nvidia-smi ("Orin (nvgpu)"), or its kernel ("5.15.148-tegra"): JetPack 5 has no
    nvidia-smi, and some images no release file.

    >>> jetson_problem("# R36 (release), REVISION: 4.3, GCID: 38968081", "", "")[:26]
    'a Jetson GPU (L4T R36.4.3)'
    """
    match = re.match(r"# R(\d{1,3}) \(release\), REVISION: (\d{1,3}(?:\.\d{1,3})?)", tegra_release)
    if match and int(match[1]) >= 38:
        return None
    if not (tegra_release or "(nvgpu)" in header or kernel.endswith("-tegra")):
        return None
    l4t = f"L4T R{match[1]}.{match[2]}" if match else "L4T"
    return (f"a Jetson GPU ({l4t}): PyTorch's aarch64 wheels are built for servers (SBSA), not "
            "for JetPack before Thor, and do not run on it; nodeprov cannot install torch here: "
            "install NVIDIA's JetPack build (pypi.jetson-ai-lab.io) yourself")


def _problem(info: GpuInfo | None, pci: tuple[PciGpu, ...], module: str | None,
             rocm: tuple[int, ...] | None, header: str) -> str | None:
    nvidia = [gpu for gpu in pci if gpu.vendor == "nvidia"]
    amd = [gpu for gpu in pci if gpu.vendor == "amd"]
    if info is not None:
        if module is not None and module != info.driver_version:
            return (f"NVML/driver version mismatch: kernel module {module}, nvidia-smi reports "
                    f"{info.driver_version}; reboot the node")
        return None
    if nvidia or module is not None:
        seen = nvidia[0].describe() if nvidia else f"NVIDIA kernel module {module}"
        if module is None:
            return (f"driver not loaded: {seen} but no NVIDIA kernel module (reboot after the "
                    "driver update? or install the driver)")
        said = header.splitlines()[0][:80] if header else "nothing"
        return f"{seen} but nvidia-smi is unusable (it printed {said!r}); reinstall the driver"
    if amd and rocm is None:
        return (f"{amd[0].describe()} but no ROCm (no /opt/rocm/.info/version, no amd-smi): "
                "install ROCm, or set torch_cuda=cpu to use the CPU build on purpose")
    return None
