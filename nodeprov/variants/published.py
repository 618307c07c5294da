"""What PyTorch published for each release: CUDA variants with the GPU architectures each was
built for, per platform, and the ROCm variants. The data only; ``choose`` holds the rule.

Sources, read in their git history:

- Variants: pytorch/test-infra ``tools/scripts/generate_binary_build_matrix.py``, the
  ``CUDA_ARCHES_DICT`` / ``ROCM_ARCHES_DICT`` "release" (or, while a release was the candidate,
  "test") lists at each release's "go live" or "advance versions" commit, and its aarch64 list
  (``CUDA_AARCH64_ARCHES``; before 2.7 the single ``cuda-aarch64`` entry). Added from the
  published indexes: ``cu129`` of 2.9, 2.10, 2.11, 2.12.1 and 2.13 (built by pytorch/pytorch's
  own matrix, not test-infra's): 2.9.x and 2.10.0 in download.pytorch.org/whl/cu129/torch/
  (tests/data/torch-index), 2.12.1 x86_64 and aarch64 in a uv.lock resolved there (same
  folder; 2.12.0 has none: ``FIRST_PATCH``), the others pinned as ``torch==2.1x.0+cu129`` in
  many public projects. Left out: 2.14's ``cu129`` (public projects say download.pytorch.org
  has none; the index, read first, would list it), 2.14's ``cu134`` and ``rocm7.14`` (built for
  the 2.14 candidates, commit 00fa5780c, but ``cu134`` is published only on NVIDIA's
  out-of-tree index): a variant listed but not published would fail the install.
- x86_64 architectures (``TORCH_CUDA_ARCH_LIST``): pytorch/builder ``manywheel/build_cuda.sh``
  on each ``release/2.x`` branch for 2.0 to 2.5 (base "5.0;6.0;7.0;7.5;8.0;8.6"; 11.8 adds
  "3.7;9.0", 12.x "9.0"); pytorch/pytorch ``.ci/manywheel/build_cuda.sh`` from 2.6 (2.7: 12.8 =
  "7.5;...;12.0+PTX"; 2.8: 12.8 = "7.0;...;12.0" and 12.9 = "7.0;...;12.0+PTX", keeping sm_70
  per pytorch/pytorch#157517; 2.9-2.10: 13.0 = "7.5;...;12.0+PTX"; 2.11 on: sm_70 gone from
  CUDA 12.8+ and no PTX), per release tag (``build_cuda.sh``, from 2.13
  ``build_env_setup.py``).
- PTX is what nightlies carry and releases usually drop (pytorch/pytorch#145616: "keep +PTX in
  our nightly builds but ... not in release"), so a release list is taken from the release
  branch, never from main: 12.4's "9.0+PTX" (builder 047ed9e3, 2024-07-26) was reverted on
  builder's ``release/2.5`` before 2.5.0 (fa48aaf5, 2024-10-04) and removed from main before the
  2.6 branch cut (pytorch/pytorch#141142, 2024-11-22): 2.5 and 2.6 cu124 have no PTX, and a
  Blackwell GPU gets "no kernel image" from them (pytorch/pytorch#167244 on a cu124 build).
  2.13.0's cu130 shipped "12.0+PTX" by mistake (pytorch/pytorch#188925); nodeprov lists 2.13 as
  later 2.13.x builds are, without it: the doubt refuses rather than installs.
  Recorded ``torch.cuda.get_arch_list()`` outputs of released wheels: tests/data/torch-arch-lists.
- aarch64 architectures: builder's rule for CUDA aarch64 builds ("9.0", GH200 only) for 2.6;
  2.7's 12.8 is "9.0;10.0;12.0" (sm_80 came to the aarch64 builds in the 2.8 cycle, with
  pytorch/pytorch#158118; ptrblck on pytorch/pytorch#152690, May 2025, after 2.7: "I assume no
  other GPU architectures are supported, e.g. A100?");
  ``.ci/aarch64_linux/aarch64_ci_build.sh`` from 2.8 (12.9: "8.0;9.0;10.0;11.0;12.0;12.1") and
  2.9 (12.6: "8.0;9.0", 12.8: "8.0;9.0;10.0;12.0", 13.0: "8.0;9.0;10.0;11.0;12.0+PTX"); 2.9's
  aarch64 cu129, published but in no build script read, is taken as 2.10's.

A variant seen in no release here (a CUDA newer than nodeprov knows) has no architecture list:
``choose`` then chooses it only when ``torch_cuda`` names it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

_K37 = "3.7;5.0;6.0;7.0;7.5;8.0;8.6"
_CU118 = f"{_K37};9.0"
_CU12_HOPPER = "5.0;6.0;7.0;7.5;8.0;8.6;9.0"
_CU128_NO_VOLTA = "7.5;8.0;8.6;9.0;10.0;12.0+PTX"
_CU128 = "7.0;7.5;8.0;8.6;9.0;10.0;12.0"
_CU129 = "7.0;7.5;8.0;8.6;9.0;10.0;12.0+PTX"
_CU13_PTX = "7.5;8.0;8.6;9.0;10.0;12.0+PTX"
_TURING_UP = "7.5;8.0;8.6;9.0;10.0;12.0"  # 2.11 on: CUDA >= 12.8 builds, no sm_70, no PTX
_ARM_HOPPER = "8.0;9.0"
_ARM_BLACKWELL = "8.0;9.0;10.0;12.0"
_ARM_CU129_28 = "8.0;9.0;10.0;11.0;12.0;12.1"
_ARM_CU13_PTX = "8.0;9.0;10.0;11.0;12.0+PTX"
_ARM_CU13 = "8.0;9.0;10.0;11.0;12.0"

X86: Final = "x86_64"
AARCH64: Final = "aarch64"

# release -> platform -> CUDA variant -> TORCH_CUDA_ARCH_LIST of that build
CUDA_BUILDS: Final[Mapping[str, Mapping[str, Mapping[str, str]]]] = {
    "2.0": {X86: {"cu117": _K37, "cu118": _CU118}},
    "2.1": {X86: {"cu118": _CU118, "cu121": _CU12_HOPPER}},
    "2.2": {X86: {"cu118": _CU118, "cu121": _CU12_HOPPER}},
    "2.3": {X86: {"cu118": _CU118, "cu121": _CU12_HOPPER}},
    "2.4": {X86: {"cu118": _CU118, "cu121": _CU12_HOPPER, "cu124": _CU12_HOPPER}},
    "2.5": {X86: {"cu118": _CU118, "cu121": _CU12_HOPPER, "cu124": _CU12_HOPPER}},
    "2.6": {X86: {"cu118": _CU118, "cu124": _CU12_HOPPER, "cu126": _CU12_HOPPER},
            AARCH64: {"cu126": "9.0"}},
    "2.7": {X86: {"cu118": _CU118, "cu126": _CU12_HOPPER, "cu128": _CU128_NO_VOLTA},
            AARCH64: {"cu128": "9.0;10.0;12.0"}},
    "2.8": {X86: {"cu126": _CU12_HOPPER, "cu128": _CU128, "cu129": _CU129},
            AARCH64: {"cu129": _ARM_CU129_28}},
    "2.9": {X86: {"cu126": _CU12_HOPPER, "cu128": _CU128, "cu129": _CU129, "cu130": _CU13_PTX},
            AARCH64: {"cu126": _ARM_HOPPER, "cu128": _ARM_BLACKWELL,
                      "cu129": f"{_ARM_BLACKWELL}+PTX", "cu130": _ARM_CU13_PTX}},
    "2.10": {X86: {"cu126": _CU12_HOPPER, "cu128": _CU128, "cu129": _CU129,
                   "cu130": _CU13_PTX},
             AARCH64: {"cu126": _ARM_HOPPER, "cu128": _ARM_BLACKWELL,
                       "cu129": f"{_ARM_BLACKWELL}+PTX", "cu130": _ARM_CU13_PTX}},
    "2.11": {X86: {"cu126": _CU12_HOPPER, "cu128": _TURING_UP, "cu129": f"{_TURING_UP}+PTX",
                   "cu130": _TURING_UP},
             AARCH64: {"cu126": _ARM_HOPPER, "cu128": _ARM_BLACKWELL,
                       "cu129": f"{_ARM_BLACKWELL}+PTX", "cu130": _ARM_CU13}},
    "2.12": {X86: {"cu126": _CU12_HOPPER, "cu129": _TURING_UP, "cu130": _TURING_UP,
                   "cu132": _TURING_UP},
             AARCH64: {"cu126": _ARM_HOPPER, "cu129": _ARM_BLACKWELL, "cu130": _ARM_CU13,
                       "cu132": _ARM_CU13}},
    "2.13": {X86: {"cu126": _CU12_HOPPER, "cu129": _TURING_UP, "cu130": _TURING_UP,
                   "cu132": _TURING_UP},
             AARCH64: {"cu126": _ARM_HOPPER, "cu129": _ARM_BLACKWELL, "cu130": _ARM_CU13,
                       "cu132": _ARM_CU13}},
    "2.14": {X86: {"cu126": _CU12_HOPPER, "cu130": _TURING_UP, "cu132": _TURING_UP},
             AARCH64: {"cu126": _ARM_HOPPER, "cu130": _ARM_CU13, "cu132": _ARM_CU13}},
}

# (release, variant) -> the first patch release that published it: 2.12.0 has no cu129
FIRST_PATCH: Final[Mapping[tuple[str, str], int]] = {("2.12", "cu129"): 1}

# release -> ROCm variants (x86_64 only: PyTorch publishes no aarch64 ROCm wheels)
ROCM_BUILDS: Final[Mapping[str, tuple[str, ...]]] = {
    "2.0": ("rocm5.3", "rocm5.4.2"), "2.1": ("rocm5.5", "rocm5.6"),
    "2.2": ("rocm5.6", "rocm5.7"), "2.3": ("rocm5.7", "rocm6.0"),
    "2.4": ("rocm6.0", "rocm6.1"), "2.5": ("rocm6.1", "rocm6.2"),
    "2.6": ("rocm6.1", "rocm6.2.4"), "2.7": ("rocm6.2.4", "rocm6.3"),
    "2.8": ("rocm6.3", "rocm6.4"), "2.9": ("rocm6.3", "rocm6.4"),
    "2.10": ("rocm7.0", "rocm7.1"), "2.11": ("rocm7.1", "rocm7.2"),
    "2.12": ("rocm7.1", "rocm7.2"), "2.13": ("rocm7.1", "rocm7.2"),
    "2.14": ("rocm7.2",),
}


def releases_oldest_first() -> list[str]:
    return sorted(CUDA_BUILDS, key=lambda release: tuple(map(int, release.split("."))))


def known_arch_list(variant: str, platform: str = X86) -> str | None:
    """The architectures of the newest release that built ``variant`` for ``platform`` (for a
    release or variant the table lacks, which the index listed), None when no known release
    built it."""
    for release in reversed(releases_oldest_first()):
        built = CUDA_BUILDS[release].get(platform, {})
        if variant in built:
            return built[variant]
    return None
