"""The torch build for (driver, GPU architectures, release, platform), every release covered,
on recorded drivers and recorded compute capabilities."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from nodeprov.variants import drivers, published
from nodeprov.variants.choose import (
    NoVariant,
    choose_cluster_variant,
    index_url,
    known_builds,
    parse_torch_version_py,
    wheel_spec,
)
from nodeprov.variants.drivers import parse_driver
from nodeprov.variants.fit import NodeGpus, parse_arch_list

DATA = Path(__file__).parents[1] / "data"
VERSION_PY = DATA / "torch-version"


def recorded_query(name: str) -> NodeGpus:
    """A node from a recorded ``--query-gpu=...,compute_cap --format=csv`` output."""
    lines = [line for line in (DATA / "nvidia-smi-query" / f"{name}.csv").read_text()
             .splitlines() if not line.startswith(("#", "$"))]
    rows = list(csv.DictReader(lines, skipinitialspace=True))
    drivers = {row["driver_version"] for row in rows}
    (driver,) = drivers
    gpus = tuple((row["name"], (int(row["compute_cap"].split(".")[0]),
                                int(row["compute_cap"].split(".")[1]))) for row in rows)
    return NodeGpus("x86_64", parse_driver(driver), gpus=gpus)


def node(driver: str, *capabilities: tuple[int, int], platform: str = "x86_64") -> NodeGpus:
    return NodeGpus(platform, parse_driver(driver),
                    gpus=tuple((f"GPU{index}", capability)
                               for index, capability in enumerate(capabilities)))


def choose(release: str, *nodes: NodeGpus) -> str:
    builds = known_builds(release)
    assert builds is not None
    return choose_cluster_variant(builds, {f"n{i}": n for i, n in enumerate(nodes)}).variant


# Drivers of recorded nvidia-smi headers (tests/data/nvidia-smi); capabilities per NVIDIA's list.
H100_535, H100_550 = node("535.129.03", (9, 0)), node("550.90.07", (9, 0))
A100_450, A100_570 = node("450.80.02", (8, 0)), node("570.124.06", (8, 0))
V100_525, B200_575 = node("525.105.17", (7, 0)), node("575.57.08", (10, 0))
RTX5090_580, TITANXP_580 = node("580.82.09", (12, 0), (8, 9)), node("580.82.09", (6, 1))
RTX5090_570 = node("570.124.06", (12, 0))
V100_470, A10G_470 = node("470.182.03", (7, 0)), node("470.256.02", (8, 6))
T4_418, GB10 = node("418.67", (7, 5)), node("580.95.05", (12, 1), platform="aarch64")
GH200_550 = node("550.90.07", (9, 0), platform="aarch64")
A10_ARM_550 = node("550.90.07", (8, 6), platform="aarch64")
T4G_ARM_550 = node("550.90.07", (7, 5), platform="aarch64")
A100_ARM_570 = node("570.124.06", (8, 0), platform="aarch64")
A100_ARM_575 = node("575.57.08", (8, 0), platform="aarch64")
VOLTA_ADA_570 = recorded_query("titanv-rtx5880ada-570")

# (node, release) -> variant, or None for a clear refusal; every release in the table appears.
CASES = [
    (A100_450, "2.0", "cu118"), (V100_525, "2.0", "cu118"), (T4_418, "2.0", None),
    (A100_450, "2.1", "cu118"), (A100_570, "2.1", "cu121"),  # cu121 needs >= 525.60.13
    (H100_535, "2.2", "cu121"), (H100_535, "2.3", "cu121"),
    (H100_550, "2.4", "cu124"), (H100_535, "2.5", "cu124"),  # minor version compatibility
    (V100_525, "2.6", "cu126"), (B200_575, "2.4", None),  # no sm_100 SASS, no PTX
    # 2.5/2.6 cu124 releases have no PTX (only nightlies did): no Blackwell there
    (B200_575, "2.6", None), (RTX5090_580, "2.5", None),
    (B200_575, "2.7", "cu128"), (V100_525, "2.7", "cu126"),  # 2.7 cu128 dropped sm_70
    (H100_535, "2.8", "cu129"), (V100_525, "2.8", "cu129"), (B200_575, "2.8", "cu129"),
    (TITANXP_580, "2.9", "cu126"), (RTX5090_580, "2.9", "cu130"),
    (B200_575, "2.9", "cu129"), (H100_535, "2.9", "cu129"),  # 2.9's cu129 (index listing)
    (VOLTA_ADA_570, "2.10", "cu129"), (A100_570, "2.11", "cu129"), (VOLTA_ADA_570, "2.11", "cu126"),
    (B200_575, "2.12", None), (H100_550, "2.12", "cu126"), (RTX5090_580, "2.13", "cu132"),
    (B200_575, "2.12.1", "cu129"), (H100_550, "2.12.1", "cu129"),  # cu129 from 2.12.1
    (RTX5090_570, "2.12.1", "cu129"), (RTX5090_570, "2.14", None),  # 2.14: no cu129 published
    # drivers before 510, their capabilities now known (CUDA probe, PCI ids): cu118 runs
    (V100_470, "2.4", "cu118"), (A10G_470, "2.7", "cu118"), (V100_470, "2.8", None),
    (TITANXP_580, "2.13", "cu126"), (RTX5090_580, "2.14", "cu132"), (B200_575, "2.13", "cu129"),
    (GB10, "2.7", "cu128"), (GB10, "2.6", None), (GB10, "2.8", "cu129"), (GB10, "2.9", "cu130"),
    (GB10, "2.14", "cu132"), (GH200_550, "2.8", "cu129"), (GH200_550, "2.11", "cu129"),
    (T4G_ARM_550, "2.11", None),  # aarch64 builds start at sm_80 (T4G: AWS Graviton g5g)
    (A10_ARM_550, "2.11", "cu129"),  # sm_86 runs their sm_80 code
    (GH200_550, "2.6", "cu126"), (GH200_550, "2.5", None),
    (A100_ARM_570, "2.7", None), (A100_ARM_575, "2.8", "cu129"),  # aarch64 sm_80 from 2.8
]


def test_every_release_in_the_table_is_covered() -> None:
    assert {release[:4].rstrip(".") for _, release, _ in CASES} == set(published.CUDA_BUILDS)


@pytest.mark.parametrize(("gpus", "release", "variant"), CASES)
def test_variant_for_driver_architectures_release_and_platform(
        gpus: NodeGpus, release: str, variant: str | None) -> None:
    if variant is None:
        with pytest.raises(NoVariant):
            choose(release, gpus)
    else:
        assert choose(release, gpus) == variant


def test_mixed_cluster_takes_the_weakest_driver_and_every_architecture() -> None:
    assert choose("2.9", RTX5090_580, H100_535) == "cu129"
    with pytest.raises(NoVariant) as raised:
        choose("2.13", RTX5090_580, TITANXP_580, B200_575)
    message = str(raised.value)
    assert "n2: 1x GPU0 (sm_100), driver 575.57.08" in message
    assert "n2: GPU0 (sm_100) has no kernels in torch 2.13 cu126" in message
    # sm_61 left the builds (2.7 cu128) before sm_100 and sm_120 came in
    assert "no torch release nodeprov knows serves every node" in message


def test_ptx_needs_a_driver_that_supports_the_cuda_fully() -> None:
    # 2.8 cu129 is "...;12.0+PTX": a GPU newer than every SASS in it (sm_130: hypothetical, no
    # such GPU is out) could JIT it on a driver of CUDA 12.9 (575), not on 570's minor
    # version compatibility.
    assert choose("2.8", node("575.57.08", (13, 0))) == "cu129"
    with pytest.raises(NoVariant, match="has only PTX, which driver 570.124.06 cannot compile"):
        choose("2.8", node("570.124.06", (13, 0)))


def test_nvidia_and_amd_nodes_cannot_share_a_build() -> None:
    builds = known_builds("2.9.1")
    assert builds is not None
    with pytest.raises(NoVariant, match=r"NVIDIA nodes \(a\) and AMD nodes \(b\)"):
        choose_cluster_variant(builds, {"a": H100_550, "b": NodeGpus("x86_64", rocm=(6, 4))})


def test_rocm_variant_from_the_installed_rocm() -> None:
    builds = known_builds("2.9.1")
    assert builds is not None
    mi = NodeGpus("x86_64", rocm=(6, 4, 1), gpus=(("AMD GPU [0x74a1]", None),))
    assert choose_cluster_variant(builds, {"a": mi}).variant == "rocm6.4"
    old = NodeGpus("x86_64", rocm=(6, 2, 0), gpus=(("AMD GPU [0x740f]", None),))
    with pytest.raises(NoVariant, match=r"rocm6\.3 needs ROCm 6\.x >= 6\.3; node has 6\.2\.0"):
        choose_cluster_variant(builds, {"a": mi, "b": old})


def test_override_is_checked_against_every_node() -> None:
    builds = known_builds("2.13.0")
    assert builds is not None
    assert choose_cluster_variant(builds, {"a": H100_535}, "cu126").variant == "cu126"
    with pytest.raises(NoVariant, match="torch 2.13 has no cu128 build for x86_64"):
        choose_cluster_variant(builds, {"a": H100_535}, "cu128")
    assert choose_cluster_variant(builds, {"a": H100_535}, "cpu").per_node == {"a": "cpu"}


def test_every_arch_list_in_the_table_parses() -> None:
    for platforms in published.CUDA_BUILDS.values():
        for variants in platforms.values():
            for arch_list in variants.values():
                assert parse_arch_list(arch_list)


def test_wheel_spec_and_index_url() -> None:
    assert wheel_spec("2.9.1", "cu128") == "torch==2.9.1+cu128"
    assert index_url("rocm6.4") == "https://download.pytorch.org/whl/rocm6.4"
    with pytest.raises(ValueError, match="full torch version"):
        wheel_spec("2.9", "cu128")
    with pytest.raises(ValueError, match="not a torch wheel variant"):
        index_url("cu12")


@pytest.mark.parametrize(("name", "expected"), [
    ("torch-2.7.1+cu126.version.py.txt", ("2.7.1+cu126", "12.6")),
])
def test_installed_version_py(name: str, expected: tuple[str, str]) -> None:
    assert parse_torch_version_py((VERSION_PY / name).read_text()) == expected


@pytest.mark.parametrize(("driver", "cuda", "runs"), [
    ("525.60.13", (12, 8), True), ("525.60.11", (12, 0), False),  # 12.x minor compatibility
    ("450.80.02", (11, 8), True), ("450.57", (11, 8), False), ("450.57", (11, 0), True),
    ("580.65.06", (13, 2), True), ("575.57.08", (13, 0), False), ("575.57.08", (12, 9), True),
    ("418.67", (11, 0), False),
])
def test_driver_runs_cuda_per_nvidias_tables(driver: str, cuda: tuple[int, int],
                                             runs: bool) -> None:
    assert drivers.runs(parse_driver(driver), cuda) is runs


def test_full_support_is_table_3_or_what_the_driver_reports() -> None:
    assert drivers.full_support(parse_driver("535.129.03")) == (12, 2)
    assert drivers.full_support(parse_driver("610.43.02"), (13, 3)) == (13, 3)
    assert drivers.full_support(parse_driver("418.67")) is None


def test_unknown_capability_refused_with_its_reason_unless_torch_cuda_names_the_build() -> None:
    why = ("nvidia-smi 470.182.03 has no compute_cap field (it came with R510), the CUDA driver "
           "API could not be loaded (libcuda.so.1: not found), and no NVIDIA PCI function is "
           "listed")
    unknown = NodeGpus("x86_64", parse_driver("470.182.03"), (11, 4),
                       (("Tesla V100-SXM2...", None),), capability_note=why)
    builds = known_builds("2.4.1")
    assert builds is not None
    with pytest.raises(NoVariant, match=re.escape(
            f"the compute capability of Tesla V100-SXM2... is unknown ({why}); set torch_cuda")):
        choose_cluster_variant(builds, {"v": unknown})
    # torch_cuda=cu118 (as the message of main advised, and refused): the driver runs CUDA
    # 11.8, so it is installed, and the job's kernel check on each GPU has the last word
    assert choose_cluster_variant(builds, {"v": unknown}, "cu118").variant == "cu118"
    with pytest.raises(NoVariant, match=r"driver 470\.182\.03 cannot run CUDA 12\.4"):
        choose_cluster_variant(builds, {"v": unknown}, "cu124")


def test_torch_cuda_still_checks_the_gpus_whose_capability_is_known() -> None:
    # one GPU unknown beside a known B200 (sm_100): torch 2.4.1's cu124 has no kernel for it,
    # and naming the build with torch_cuda leaves only the unknown GPU to the job's check
    mixed = NodeGpus("x86_64", parse_driver("580.95.05"), (13, 0),
                     (("NVIDIA B200", (10, 0)), ("GPU of an unknown model", None)),
                     capability_note="not reported")
    builds = known_builds("2.4.1")
    assert builds is not None
    with pytest.raises(NoVariant, match=r"NVIDIA B200 \(sm_100\)"):
        choose_cluster_variant(builds, {"v": mixed}, "cu124")
