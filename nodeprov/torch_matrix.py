"""Which PyTorch wheel a node's NVIDIA driver can run, and one choice for a whole cluster.

    >>> choose_variant("2.8.0", (12, 8))
    'cu128'
    >>> wheel_spec("2.8.0", "cu128"), index_url("cu128")
    ('torch==2.8.0+cu128', 'https://download.pytorch.org/whl/cu128')

The rule: a ``cuXY`` wheel runs when the driver's maximum CUDA version, as the ``nvidia-smi``
header reports it, is at least X.Y. CUDA's minor-version compatibility would start a CUDA 12.x
wheel on any CUDA 12 driver >= 525.60.13, but PTX JIT and some libraries then fail at run time;
requiring the full version is conservative and easy to explain. A node without a driver gets
the CPU wheel; a GPU node never silently does.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

Cuda = tuple[int, int]

INDEX_BASE: Final = "https://download.pytorch.org/whl"

# Release -> arch -> CUDA variants on download.pytorch.org. "RELEASE.md" is the Release
# Compatibility Matrix of pytorch/pytorch (stable + experimental CUDA; read from a stored
# verbatim copy); "previous-versions" is pytorch.org/get-started/previous-versions. An aarch64
# variant is listed only where a published wheel was seen; unverified ones are left out on
# purpose, so choose_variant refuses instead of guessing.
WHEEL_VARIANTS: Final[Mapping[str, Mapping[str, tuple[str, ...]]]] = {
    "2.0": {"x86_64": ("cu117", "cu118")},  # previous-versions v2.0.0, v2.0.1
    "2.1": {"x86_64": ("cu118", "cu121")},  # previous-versions v2.1.x; RELEASE.md
    "2.2": {"x86_64": ("cu118", "cu121")},  # previous-versions v2.2.x; RELEASE.md
    "2.3": {"x86_64": ("cu118", "cu121")},  # previous-versions v2.3.x; RELEASE.md
    "2.4": {"x86_64": ("cu118", "cu121", "cu124")},  # previous-versions v2.4.x; RELEASE.md
    "2.5": {"x86_64": ("cu118", "cu121", "cu124")},  # previous-versions v2.5.x; RELEASE.md
    # aarch64: torch-2.6.0+cu126 linux_aarch64 wheel on /whl/cu126 (hash-pinned in uv locks).
    "2.6": {"x86_64": ("cu118", "cu124", "cu126"), "aarch64": ("cu126",)},
    # aarch64: the 2.7 build matrix had only "12.8-aarch64"; 2.7.0+cu128 aarch64 wheels exist.
    "2.7": {"x86_64": ("cu118", "cu126", "cu128"), "aarch64": ("cu128",)},
    # aarch64: cu128 (pytorch/pytorch#160162), 2.8.0+cu129 aarch64 wheel on /whl/cu129.
    "2.8": {"x86_64": ("cu126", "cu128", "cu129"), "aarch64": ("cu128", "cu129")},
    # aarch64: 2.9.1+cu128 and 2.9.x+cu130 wheels seen; cu126 not verified.
    "2.9": {"x86_64": ("cu126", "cu128", "cu130"), "aarch64": ("cu128", "cu130")},
    # aarch64: 2.10.0+cu128 and 2.10.0+cu130 wheels seen; cu126 not verified.
    "2.10": {"x86_64": ("cu126", "cu128", "cu130"), "aarch64": ("cu128", "cu130")},
    # aarch64: 2.11.0+cu130 wheel seen; cu126 and cu128 not verified.
    "2.11": {"x86_64": ("cu126", "cu128", "cu130"), "aarch64": ("cu130",)},
    # RELEASE.md lists 12.6, 13.0 and 13.2 aarch64 builds for 2.12 to 2.14.
    "2.12": {"x86_64": ("cu126", "cu130", "cu132"), "aarch64": ("cu126", "cu130", "cu132")},
    "2.13": {"x86_64": ("cu126", "cu130", "cu132"), "aarch64": ("cu126", "cu130", "cu132")},
}

ARCHES: Final = ("x86_64", "aarch64")


class NoVariant(ValueError):
    """No wheel of the asked torch release suits the node's driver or architecture."""


@dataclass(frozen=True)
class ClusterChoice:
    """One variant for every GPU node (all ranks must load the same bundled NCCL); CPU-only
    nodes get ``cpu``, so a job that spans them must use the gloo backend."""

    variant: str
    per_node: dict[str, str]
    limiting_node: str | None
    unlock: str | None


def choose_variant(torch_version: str, driver_cuda: Cuda | None, arch: str = "x86_64") -> str:
    """The newest variant of the release that the driver runs; ``cpu`` when there is none.

    >>> choose_variant("2.9.1", (12, 6)), choose_variant("2.9.1", None)
    ('cu126', 'cpu')
    """
    release = _release(torch_version)
    variants = _variants(release, arch)
    if driver_cuda is None:
        return "cpu"
    if not variants:
        raise NoVariant(_no_arch_wheels(release, arch))
    runnable = [variant for variant in variants if _cuda_of(variant) <= driver_cuda]
    if not runnable:
        raise NoVariant(_too_old(release, arch, driver_cuda, variants))
    return max(runnable, key=_cuda_of)


def choose_cluster_variant(
    torch_version: str,
    nodes: Mapping[str, tuple[Cuda | None, str]],
    override: str | None = None,
) -> ClusterChoice:
    """Pick one variant for the cluster, held back by its weakest GPU driver.

    ``nodes`` maps node name to (driver's CUDA or None, arch); ``override`` ("cpu", "cu126")
    replaces the choice after checking that every GPU node can run it.
    """
    release = _release(torch_version)
    if not nodes:
        raise ValueError("no nodes to choose a torch wheel for")
    gpu_nodes = {name: (cuda, arch) for name, (cuda, arch) in nodes.items() if cuda is not None}
    per_arch = {arch: _variants(release, arch) for _, arch in nodes.values()}
    if override is not None:
        _check_override(release, override, gpu_nodes)
        return ClusterChoice(override, _per_node(nodes, override), None, None)
    if not gpu_nodes:
        return ClusterChoice("cpu", _per_node(nodes, "cpu"), None, None)
    for name, (_, arch) in sorted(gpu_nodes.items()):
        if not per_arch[arch]:
            raise NoVariant(f"{name}: {_no_arch_wheels(release, arch)}")
    common = sorted(set.intersection(*(set(per_arch[arch]) for _, arch in gpu_nodes.values())),
                    key=_cuda_of)
    if not common:
        offered = "; ".join(f"{arch}: {', '.join(per_arch[arch])}" for arch in sorted(per_arch))
        raise NoVariant(f"torch {release} has no CUDA variant built for every node's "
                        f"architecture ({offered}); use nodes of one architecture")
    weakest = min(gpu_nodes, key=lambda name: (gpu_nodes[name][0], name))
    weakest_cuda, weakest_arch = gpu_nodes[weakest]
    runnable = [variant for variant in common if _cuda_of(variant) <= weakest_cuda]
    if not runnable:
        raise NoVariant(
            f"{weakest}: {_too_old(release, weakest_arch, weakest_cuda, tuple(common))}")
    variant, best = runnable[-1], common[-1]
    if variant == best:
        return ClusterChoice(variant, _per_node(nodes, variant), None, None)
    held = sorted((name, cuda) for name, (cuda, _) in gpu_nodes.items()
                  if cuda < _cuda_of(best))
    return ClusterChoice(variant, _per_node(nodes, variant), weakest,
                         _unlock_hint(held, variant, best))


def wheel_spec(torch_version: str, variant: str) -> str:
    """The pip requirement with the local label, e.g. ``torch==2.9.1+cu128``."""
    if not re.fullmatch(r"\d+\.\d+\.\d+", torch_version):
        raise ValueError(f"a wheel needs a full torch version such as 2.9.1, not {torch_version!r}")
    release = _release(torch_version)
    published = {v for arch in ARCHES for v in WHEEL_VARIANTS[release].get(arch, ())}
    if variant != "cpu" and variant not in published:
        raise NoVariant(f"torch {release} has no {variant} wheel; it has: "
                        f"{', '.join(sorted(published, key=_cuda_of))}, cpu")
    return f"torch=={torch_version}+{variant}"


def index_url(variant: str) -> str:
    """The package index that serves the variant's wheels."""
    if not re.fullmatch(r"cpu|cu\d{3}", variant):
        raise ValueError(f"not a torch wheel variant: {variant!r} (expected cpu or cuXYZ)")
    return f"{INDEX_BASE}/{variant}"


def parse_torch_version_py(text: str) -> tuple[str | None, str | None]:
    """``__version__`` and ``cuda`` from an installed ``torch/version.py``, read as literals.

    >>> parse_torch_version_py("__version__ = '2.13.0+cpu'\\ncuda: Optional[str] = None\\n")
    ('2.13.0+cpu', None)
    """
    if not text.strip():
        return None, None
    try:
        tree = ast.parse(text)
    except SyntaxError as error:
        raise ValueError(f"torch/version.py is not Python: {error.msg} (line {error.lineno})"
                         ) from error
    values: dict[str, str | None] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, value = statement.target, statement.value
        else:
            continue
        if (isinstance(target, ast.Name) and isinstance(value, ast.Constant)
                and (value.value is None or isinstance(value.value, str))):
            values[target.id] = value.value
    return values.get("__version__"), values.get("cuda")


def _release(torch_version: str) -> str:
    match = re.fullmatch(r"(\d+)\.(\d+)(?:\.\d+)?", torch_version)
    release = f"{match.group(1)}.{match.group(2)}" if match else None
    if release is None or release not in WHEEL_VARIANTS:
        raise ValueError(f"unknown torch release {torch_version!r}; known releases: "
                         f"{', '.join(_releases_oldest_first())} (a patch level like 2.9.1 is "
                         "fine)")
    return release


def _variants(release: str, arch: str) -> tuple[str, ...]:
    if arch not in ARCHES:
        raise ValueError(f"no PyTorch CUDA wheels for architecture {arch!r}; "
                         f"nodeprov knows {', '.join(ARCHES)}")
    return WHEEL_VARIANTS[release].get(arch, ())


def _cuda_of(variant: str) -> Cuda:
    digits = variant.removeprefix("cu")  # cu118 -> (11, 8), cu130 -> (13, 0)
    return int(digits[:-1]), int(digits[-1])


def _releases_oldest_first() -> list[str]:
    return sorted(WHEEL_VARIANTS, key=lambda release: tuple(map(int, release.split("."))))


def _show(cuda: Cuda) -> str:
    return f"{cuda[0]}.{cuda[1]}"


def _too_old(release: str, arch: str, driver_cuda: Cuda, variants: tuple[str, ...]) -> str:
    lowest = min(_cuda_of(variant) for variant in variants)
    wheels = "aarch64 wheels" if arch == "aarch64" else "wheels"
    message = (f"driver supports CUDA {_show(driver_cuda)}; torch {release} {wheels} need "
               f"CUDA >= {_show(lowest)} ({', '.join(variants)}); ")
    for older in reversed(_releases_oldest_first()):
        fits = [v for v in WHEEL_VARIANTS[older].get(arch, ()) if _cuda_of(v) <= driver_cuda]
        if fits:
            best = max(fits, key=_cuda_of)
            return message + (f"torch {older} is the newest release with a wheel for this "
                              f"driver ({best}), or upgrade the driver")
    return message + "no torch release has a wheel for this driver: upgrade the driver"


def _no_arch_wheels(release: str, arch: str) -> str:
    having = [f"{older} ({', '.join(WHEEL_VARIANTS[older][arch])})"
              for older in _releases_oldest_first() if arch in WHEEL_VARIANTS[older]]
    return (f"torch {release} has no {arch} CUDA wheel that nodeprov knows of "
            f"(releases with one: {'; '.join(having)}); refusing to put the CPU build on a GPU "
            "node: pick one of those releases")


def _check_override(release: str, override: str,
                    gpu_nodes: Mapping[str, tuple[Cuda, str]]) -> None:
    if override == "cpu":
        return
    index_url(override)  # rejects what is not a variant name at all
    if not gpu_nodes:
        raise ValueError(f"torch_cuda={override} asks for CUDA wheels but no node has a usable "
                         "NVIDIA driver; use cpu")
    for name, (cuda, arch) in sorted(gpu_nodes.items()):
        variants = _variants(release, arch)
        if override not in variants:
            raise NoVariant(f"{name}: torch {release} has no {override} wheel for {arch} "
                            f"(it has: {', '.join(variants) or 'none'})")
        if _cuda_of(override) > cuda:
            raise NoVariant(f"{name}: driver supports CUDA {_show(cuda)}; {override} needs "
                            f"CUDA >= {_show(_cuda_of(override))}; upgrade its driver or pick "
                            "an older variant")


def _per_node(nodes: Mapping[str, tuple[Cuda | None, str]], variant: str) -> dict[str, str]:
    return {name: variant if cuda is not None else "cpu" for name, (cuda, _) in nodes.items()}


def _unlock_hint(held: list[tuple[str, Cuda]], variant: str, best: str) -> str:
    needed = _show(_cuda_of(best))
    if len(held) == 1:
        name, cuda = held[0]
        return (f"{name}'s driver (CUDA {_show(cuda)}) holds the cluster at {variant}; "
                f"a driver supporting CUDA {needed} would allow {best}")
    drivers = ", ".join(f"{name} (CUDA {_show(cuda)})" for name, cuda in held)
    return (f"the drivers of {drivers} hold the cluster at {variant}; drivers supporting "
            f"CUDA {needed} there would allow {best}")
