"""A node's GPUs, from every source ``facts.sh`` reads, so a GPU node is never taken for a CPU
node: ``nvidia-smi`` (``nvidia``), the CUDA probe where nvidia-smi lacks compute_cap
(``capability``), the PCI bus (``pci``), ``/proc/driver/nvidia/version``, the driver's device
files and WSL2's, and the installed ROCm (``amd``)::

    nvidia_info, accelerators = read_gpus(sections)
    accelerators.problem   # "driver not loaded: reboot after the driver update? (...)" or None

A GPU that is there (on the PCI bus, a loaded NVIDIA kernel module, its device files, WSL2's
GPU) but cannot be used makes ``problem`` say why, and so does an nvidia-smi that is installed
but fails: the torch task fails on that node with it. Only a node without nvidia-smi and
without any of these is a CPU node.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from nodeprov.gpu.amd import parse_rocm_version
from nodeprov.gpu.capability import parse_cuda_probe, with_capabilities
from nodeprov.gpu.nvidia import (
    QUERY_FIELDS,
    Gpu,
    GpuInfo,
    failure_cause,
    parse_nvidia_smi,
    parse_proc_version,
)
from nodeprov.gpu.pci import PciGpu, parse_pci_gpus

# device nodes of a loaded NVIDIA driver, and WSL2's GPU: the paravirtual device and the Windows
# driver's CUDA library (WSL has no NVIDIA PCI function and no kernel module)
GPU_FILES = ("/dev/nvidiactl", "/dev/nvidia0", "/dev/dxg", "/usr/lib/wsl/lib/libcuda.so.1")
WSL_GPU = frozenset(GPU_FILES[2:])

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
    files = parse_gpu_files(text("gpu_files"))
    header = text("nvidia_smi")
    jetson = jetson_problem(text("tegra"), header, text("kernel"))
    if jetson:
        return None, Accelerators(pci, module, problem=jetson)
    cause = failure_cause(header)
    if cause is not None:
        return None, Accelerators(pci, module, problem=_unreachable(cause, pci, module, files))
    info = parse_nvidia_smi(header, text("nvidia_query"))
    rocm = parse_rocm_version(text("rocm_version"), text("amd_smi"))
    if info is not None:
        probe = parse_cuda_probe(text("cuda_probe"))
        broken = probe.failure(info.driver_version) if probe else None
        if broken:
            return info, Accelerators(pci, module, rocm, broken)
        info = with_capabilities(info, probe, pci)
    problem = _problem(info, pci, module, rocm, header, files)
    return info, Accelerators(pci, module, rocm, problem)


def parse_gpu_files(text: str) -> frozenset[str]:
    """The driver files facts.sh found (``GPU_FILES``); a line naming anything else is refused.

    >>> sorted(parse_gpu_files("/dev/dxg\\n/usr/lib/wsl/lib/libcuda.so.1"))
    ['/dev/dxg', '/usr/lib/wsl/lib/libcuda.so.1']
    """
    found = frozenset(line.strip() for line in text.splitlines() if line.strip())
    unknown = sorted(found - set(GPU_FILES))
    if unknown:
        raise ValueError(f"unexpected gpu_files line {unknown[0][:80]!r}; expected one of "
                         f"{', '.join(GPU_FILES)}")
    return found


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


def _unreachable(cause: str, pci: tuple[PciGpu, ...], module: str | None,
                 files: frozenset[str]) -> str:
    """Why an installed nvidia-smi that fails leaves the node without a usable GPU."""
    if files >= WSL_GPU:
        return (f"a WSL2 GPU (/dev/dxg, /usr/lib/wsl/lib/libcuda.so.1) that nvidia-smi cannot "
                f"reach: {cause}. In WSL the driver is the Windows one: update it on Windows, "
                "run 'wsl --shutdown', start the distribution again, and install no Linux "
                "NVIDIA driver inside WSL")
    if module is not None or files or any(gpu.vendor == "nvidia" for gpu in pci):
        return cause
    return (f"{cause}; nvidia-smi is installed, so this node is not taken for a CPU node: if it "
            "has no NVIDIA GPU, set torch_cuda: cpu for it (or remove the NVIDIA driver)")


def _problem(info: GpuInfo | None, pci: tuple[PciGpu, ...], module: str | None,
             rocm: tuple[int, ...] | None, header: str, files: frozenset[str]) -> str | None:
    nvidia = [gpu for gpu in pci if gpu.vendor == "nvidia"]
    amd = [gpu for gpu in pci if gpu.vendor == "amd"]
    if info is not None:
        if module is not None and module != info.driver_version:
            return (f"NVML/driver version mismatch: kernel module {module}, nvidia-smi reports "
                    f"{info.driver_version}; reboot the node")
        return None
    if files >= WSL_GPU:
        return ("a WSL2 GPU (/dev/dxg, /usr/lib/wsl/lib/libcuda.so.1) but no nvidia-smi in "
                "/usr/lib/wsl/lib: update the NVIDIA driver on Windows (it brings WSL's), then "
                "'wsl --shutdown'")
    if nvidia or module is not None or files - WSL_GPU:
        seen = (nvidia[0].describe() if nvidia else f"NVIDIA kernel module {module}"
                if module else f"NVIDIA device files ({', '.join(sorted(files - WSL_GPU))})")
        if module is None and nvidia:
            return (f"driver not loaded: {seen} but no NVIDIA kernel module (reboot after the "
                    "driver update? or install the driver)")
        said = header.splitlines()[0][:80] if header else "nothing"
        return f"{seen} but nvidia-smi is unusable (it printed {said!r}); reinstall the driver"
    if amd and rocm is None:
        return (f"{amd[0].describe()} but no ROCm (no /opt/rocm/.info/version, no amd-smi): "
                "install ROCm, or set torch_cuda=cpu to use the CPU build on purpose")
    return None
