"""What PyTorch published for each release: CUDA variants with the GPU architectures each was
built for, per platform, and the ROCm variants. The data only; ``torch_matrix`` holds the rule.

Sources, read in their git history:

- Variants: pytorch/test-infra ``tools/scripts/generate_binary_build_matrix.py``, the
  ``CUDA_ARCHES_DICT`` / ``ROCM_ARCHES_DICT`` "release" (or, while a release was the candidate,
  "test") lists at each release's "go live" or "advance versions" commit, and its aarch64 list
  (``CUDA_AARCH64_ARCHES``; before 2.7 the single ``cuda-aarch64`` entry). 2.14: commit 00fa5780c
  "Update binary build matrix for release 2.14" (test channel: 12.6, 13.0, 13.2, 13.4; ROCm 7.2,
  7.14).
- Architectures (``TORCH_CUDA_ARCH_LIST``): pytorch/builder ``manywheel/build_cuda.sh`` for 2.0 to
  2.5 (base "5.0;6.0;7.0;7.5;8.0;8.6", 11.8 adds "3.7;9.0", 12.x adds "9.0", 12.4 "9.0+PTX" from
  2024-07-26); pytorch/pytorch ``.ci/manywheel/build_cuda.sh`` from 2.6 on (2.7: 12.8 =
  "7.5;8.0;8.6;9.0;10.0;12.0+PTX"; 2.8: 12.8 = "7.0;...;12.0", 12.9 = "7.0;...;12.0+PTX" after
  pytorch/pytorch#157517 kept sm_70; 2.9 on: 13.x = "7.5;8.0;8.6;9.0;10.0;12.0+PTX").
  aarch64 builds use the same lists except 2.8's 12.9 aarch64 build, which
  ``.ci/aarch64_linux/aarch64_ci_build.sh`` sets to "8.0;9.0;10.0;11.0;12.0;12.1".

A variant seen in no release here (a CUDA newer than nodeprov knows) has no architecture list:
``torch_matrix`` then chooses it only when ``torch_cuda`` names it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

_K37 = "3.7;5.0;6.0;7.0;7.5;8.0;8.6"
_CU118 = f"{_K37};9.0"
_CU12_HOPPER = "5.0;6.0;7.0;7.5;8.0;8.6;9.0"
_CU124_PTX = "5.0;6.0;7.0;7.5;8.0;8.6;9.0+PTX"
_CU128_NO_VOLTA = "7.5;8.0;8.6;9.0;10.0;12.0+PTX"
_CU128 = "7.0;7.5;8.0;8.6;9.0;10.0;12.0"
_CU129 = "7.0;7.5;8.0;8.6;9.0;10.0;12.0+PTX"
_CU13 = "7.5;8.0;8.6;9.0;10.0;12.0+PTX"
_CU129_AARCH64 = "8.0;9.0;10.0;11.0;12.0;12.1"

X86: Final = "x86_64"
AARCH64: Final = "aarch64"

# release -> platform -> CUDA variant -> TORCH_CUDA_ARCH_LIST of that build
CUDA_BUILDS: Final[Mapping[str, Mapping[str, Mapping[str, str]]]] = {
    "2.0": {X86: {"cu117": _K37, "cu118": _CU118}},
    "2.1": {X86: {"cu118": _CU118, "cu121": _CU12_HOPPER}},
    "2.2": {X86: {"cu118": _CU118, "cu121": _CU12_HOPPER}},
    "2.3": {X86: {"cu118": _CU118, "cu121": _CU12_HOPPER}},
    "2.4": {X86: {"cu118": _CU118, "cu121": _CU12_HOPPER, "cu124": _CU12_HOPPER}},
    "2.5": {X86: {"cu118": _CU118, "cu121": _CU12_HOPPER, "cu124": _CU124_PTX}},
    "2.6": {X86: {"cu118": _CU118, "cu124": _CU124_PTX, "cu126": _CU12_HOPPER},
            AARCH64: {"cu126": _CU12_HOPPER}},
    "2.7": {X86: {"cu118": _CU118, "cu126": _CU12_HOPPER, "cu128": _CU128_NO_VOLTA},
            AARCH64: {"cu128": _CU128_NO_VOLTA}},
    "2.8": {X86: {"cu126": _CU12_HOPPER, "cu128": _CU128, "cu129": _CU129},
            AARCH64: {"cu129": _CU129_AARCH64}},
    **{release: {platform: {"cu126": _CU12_HOPPER, "cu128": _CU128, "cu130": _CU13}
                 for platform in (X86, AARCH64)} for release in ("2.9", "2.10", "2.11")},
    **{release: {platform: {"cu126": _CU12_HOPPER, "cu130": _CU13, "cu132": _CU13}
                 for platform in (X86, AARCH64)} for release in ("2.12", "2.13")},
    "2.14": {platform: {"cu126": _CU12_HOPPER, "cu130": _CU13, "cu132": _CU13, "cu134": _CU13}
             for platform in (X86, AARCH64)},
}

# release -> ROCm variants (x86_64 only: PyTorch publishes no aarch64 ROCm wheels)
ROCM_BUILDS: Final[Mapping[str, tuple[str, ...]]] = {
    "2.0": ("rocm5.3", "rocm5.4.2"), "2.1": ("rocm5.5", "rocm5.6"),
    "2.2": ("rocm5.6", "rocm5.7"), "2.3": ("rocm5.7", "rocm6.0"),
    "2.4": ("rocm6.0", "rocm6.1"), "2.5": ("rocm6.1", "rocm6.2"),
    "2.6": ("rocm6.1", "rocm6.2.4"), "2.7": ("rocm6.2.4", "rocm6.3"),
    "2.8": ("rocm6.3", "rocm6.4"), "2.9": ("rocm6.3", "rocm6.4"),
    "2.10": ("rocm7.0", "rocm7.1"), "2.11": ("rocm7.1", "rocm7.2"),
    "2.12": ("rocm7.1", "rocm7.2"), "2.13": ("rocm7.1", "rocm7.2"),
    "2.14": ("rocm7.2", "rocm7.14"),
}


def releases_oldest_first() -> list[str]:
    return sorted(CUDA_BUILDS, key=lambda release: tuple(map(int, release.split("."))))


def known_arch_list(variant: str) -> str | None:
    """The architectures of the newest release that built ``variant`` (for a release nodeprov
    does not know, whose variants the index listed), None when no known release built it."""
    for release in reversed(releases_oldest_first()):
        for builds in CUDA_BUILDS[release].values():
            if variant in builds:
                return builds[variant]
    return None
