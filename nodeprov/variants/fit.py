"""Whether one torch build serves one node: its driver, its GPUs' architectures, its ROCm.

    >>> node = NodeGpus("x86_64", driver=(535, 129, 3), gpus=(("NVIDIA H100", (9, 0)),))
    >>> nvidia_problem(node, "2.13", "cu126", "5.0;6.0;7.0;7.5;8.0;8.6;9.0") is None
    True

Each ``*_problem`` returns None when the build serves the node, else the reason in words.
A GPU of compute capability X.Y runs code built for X.Z with Z <= Y (SASS: same major version,
NVIDIA's binary compatibility), or PTX built for an older architecture, which the driver
compiles at load time; only a driver that supports the build's CUDA fully can do that (minor
version compatibility excludes PTX JIT). The architecture list is PyTorch's
``TORCH_CUDA_ARCH_LIST`` ("8.0;9.0;12.0+PTX").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from nodeprov.variants import drivers
from nodeprov.variants.drivers import Cuda, Driver

Capability = tuple[int, int]
_ARCH_RE = re.compile(r"(\d+)\.(\d+)(\+PTX)?")
_ROCM_RE = re.compile(r"rocm(\d+)\.(\d+)(?:\.(\d+))?")


@dataclass(frozen=True)
class NodeGpus:
    """What the choice knows of one node: platform, NVIDIA driver and GPUs (name, compute
    capability or None when unknown, ``capability_note`` saying why), installed ROCm. No driver
    and no ROCm: a CPU node."""

    platform: str
    driver: Driver | None = None
    driver_cuda: Cuda | None = None
    gpus: tuple[tuple[str, Capability | None], ...] = ()
    rocm: tuple[int, ...] | None = None
    capability_note: str | None = None

    @classmethod
    def nvidia(cls, platform: str, driver_version: str, driver_cuda: Cuda,
               gpus: Iterable[tuple[str, Capability | None]],
               capability_note: str | None = None) -> NodeGpus:
        """A node with NVIDIA GPUs, from what nvidia-smi reports (``gpu.GpuInfo``'s fields)."""
        return cls(platform, drivers.parse_driver(driver_version), driver_cuda, tuple(gpus),
                   capability_note=capability_note)

    def describe(self) -> str:
        """``2x NVIDIA H100 (sm_90), driver 535.129.03``"""
        counts: dict[str, int] = {}
        for name, capability in self.gpus:
            label = f"{name} ({sm(capability) if capability else 'sm_?'})"
            counts[label] = counts.get(label, 0) + 1
        gpus = ", ".join(f"{count}x {label}" for label, count in counts.items()) or "GPUs"
        if self.rocm is not None:
            return f"{gpus}, ROCm {'.'.join(map(str, self.rocm))}"
        driver = drivers.show_driver(self.driver) if self.driver else "none"
        return f"{gpus}, driver {driver}"


def sm(capability: Capability) -> str:
    return f"sm_{capability[0]}{capability[1]}"


def cuda_of(variant: str) -> Cuda:
    """cu118 -> (11, 8), cu130 -> (13, 0)."""
    digits = variant.removeprefix("cu")
    return int(digits[:-1]), int(digits[-1])


def rocm_of(variant: str) -> tuple[int, ...]:
    """rocm6.2.4 -> (6, 2, 4)."""
    match = _ROCM_RE.fullmatch(variant)
    if match is None:
        raise ValueError(f"not a ROCm variant: {variant!r} (expected e.g. rocm6.4)")
    return tuple(int(part) for part in match.groups() if part is not None)


def parse_arch_list(arch_list: str) -> list[tuple[Capability, bool]]:
    """``"8.6;9.0+PTX"`` -> [((8, 6), False), ((9, 0), True)]: (architecture, with PTX)."""
    parsed = []
    for item in arch_list.split(";"):
        match = _ARCH_RE.fullmatch(item.strip())
        if match is None:
            raise ValueError(f"not a TORCH_CUDA_ARCH_LIST entry: {item!r}")
        parsed.append(((int(match.group(1)), int(match.group(2))), bool(match.group(3))))
    return parsed


def nvidia_problem(node: NodeGpus, release: str, variant: str, arch_list: str | None,
                   unknown_arch_ok: bool = False) -> str | None:
    """Why torch ``release`` ``variant`` cannot run on this NVIDIA node, None when it can.
    ``unknown_arch_ok``: ``torch_cuda`` named the build, so unknown architectures (the build's
    or a GPU's) do not refuse it; otherwise such a build is not chosen."""
    assert node.driver is not None
    cuda = cuda_of(variant)
    driver = drivers.show_driver(node.driver)
    if not drivers.runs(node.driver, cuda):
        return (f"driver {driver} cannot run CUDA {cuda[0]}.{cuda[1]} (needs "
                f"{drivers.minimum_driver(cuda)})")
    # with torch_cuda, what cannot be known here is left to the job's kernel check on each GPU
    unknown = sorted({name for name, capability in node.gpus if capability is None})
    if arch_list is None:
        return None if unknown_arch_ok else (
            f"nodeprov does not know which GPU architectures {variant} was built for")
    if unknown and not unknown_arch_ok:
        return (f"the compute capability of {', '.join(unknown)} is unknown "
                f"({node.capability_note or 'not reported'}); set torch_cuda to name a build")
    built = parse_arch_list(arch_list)
    full = drivers.full_support(node.driver, node.driver_cuda)
    known = {(name, capability) for name, capability in node.gpus if capability is not None}
    for name, capability in sorted(known, key=lambda gpu: (gpu[1], gpu[0])):
        missing = _kernel_problem(capability, built, full is not None and full >= cuda, driver,
                                  cuda)
        if missing:
            return (f"{name} ({sm(capability)}) {missing} in torch {release} {variant} "
                    f"(built for {arch_list})")
    return None


def _kernel_problem(capability: Capability, built: Sequence[tuple[Capability, bool]],
                    can_jit: bool, driver: str, cuda: Cuda) -> str | None:
    if any(arch[0] == capability[0] and arch[1] <= capability[1] for arch, _ in built):
        return None
    if any(ptx and arch <= capability for arch, ptx in built):
        if can_jit:
            return None
        return (f"has only PTX, which driver {driver} cannot compile for CUDA "
                f"{cuda[0]}.{cuda[1]} (minor version compatibility has no PTX JIT)")
    return "has no kernels"


def rocm_problem(node: NodeGpus, variant: str) -> str | None:
    """Why a ROCm wheel cannot run on this node: it bundles its ROCm libraries, which need the
    node's ROCm of the same major version and no older (the kernel driver ships with it)."""
    assert node.rocm is not None
    wanted = rocm_of(variant)
    installed = ".".join(map(str, node.rocm))
    if wanted[0] != node.rocm[0] or wanted[:2] > node.rocm[:2]:
        return (f"{variant} needs ROCm {wanted[0]}.x >= {wanted[0]}.{wanted[1]}; node has "
                f"{installed}")
    return None
