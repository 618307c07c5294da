"""Choosing torch wheels for recorded drivers, alone and as a cluster."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_gpu import parse_recorded

from nodeprov.torch_matrix import (
    WHEEL_VARIANTS,
    ClusterChoice,
    NoVariant,
    choose_cluster_variant,
    choose_variant,
    index_url,
    parse_torch_version_py,
    wheel_spec,
)

VERSION_PY = Path(__file__).parent / "data" / "torch-version"


def driver_cuda(record: str) -> tuple[int, int] | None:
    info = parse_recorded(record)
    return info.cuda_version if info else None


@pytest.mark.parametrize(("record", "torch_version", "variant"), [
    ("driver-525-cuda120-v100", "2.1.2", "cu118"),
    ("driver-525-cuda120-v100", "2.5", "cu118"),
    ("driver-535-cuda122-2xa100-mig-on-one", "2.4.1", "cu121"),
    ("wsl-smi-530-driver-531-cuda121", "2.3.1", "cu121"),  # boundary: 12.1 runs cu121
    ("driver-550-cuda124-8xh100", "2.5.1", "cu124"),
    ("driver-550-cuda124-8xh100", "2.6.0", "cu124"),
    ("driver-550-cuda124-8xh100", "2.7.1", "cu118"),  # 2.7 skipped cu124
    ("driver-560-cuda126-5-mixed", "2.6.0", "cu126"),  # boundary: 12.6 runs cu126
    ("driver-560-cuda126-5-mixed", "2.9.1", "cu126"),
    ("driver-570-cuda128-a100", "2.7.1", "cu128"),  # boundary: 12.8 runs cu128
    ("driver-570-cuda128-a100", "2.13.0", "cu126"),  # 2.13 has no cu128
    ("driver-575-cuda129-8xb200", "2.8.0", "cu129"),
    ("driver-575-cuda129-8xb200", "2.9.1", "cu128"),
    ("driver-580-cuda130-rtx5090-rtx4090", "2.9.1", "cu130"),
    ("driver-580-cuda130-rtx5090-rtx4090", "2.13.0", "cu130"),
    ("driver-610-cuda133-kmd-umd-header", "2.12.0", "cu132"),
    ("driver-610-cuda133-kmd-umd-header", "2.11.0", "cu130"),
    ("no-devices-found", "2.9.1", "cpu"),
    ("command-not-found-bash", "2.13.0", "cpu"),
])
def test_variant_for_recorded_driver(record: str, torch_version: str, variant: str) -> None:
    assert choose_variant(torch_version, driver_cuda(record)) == variant


def test_just_below_a_variant_takes_the_one_before() -> None:
    assert choose_variant("2.7.1", (12, 7)) == "cu126"


def test_too_old_driver_names_what_would_work() -> None:
    with pytest.raises(NoVariant) as raised:
        choose_variant("2.8.0", driver_cuda("driver-525-cuda120-v100"))
    assert str(raised.value) == (
        "driver supports CUDA 12.0; torch 2.8 wheels need CUDA >= 12.6 (cu126, cu128, cu129); "
        "torch 2.7 is the newest release with a wheel for this driver (cu118), or upgrade the "
        "driver")


@pytest.mark.parametrize("record", ["driver-418-cuda101-t4", "driver-450-cuda110-titanxp",
                                    "driver-470-cuda114-laptop"])
def test_driver_too_old_for_every_release(record: str) -> None:
    with pytest.raises(NoVariant, match=r"torch 2\.1 wheels need CUDA >= 11\.8 \(cu118, cu121\); "
                                        r"no torch release has a wheel for this driver"):
        choose_variant("2.1.0", driver_cuda(record))


def test_aarch64_uses_the_aarch64_wheels() -> None:
    gb10 = driver_cuda("dgx-spark-gb10-580-aarch64")
    assert choose_variant("2.9.1", gb10, "aarch64") == "cu130"
    assert choose_variant("2.8.0", gb10, "aarch64") == "cu129"
    assert choose_variant("2.6.0", gb10, "aarch64") == "cu126"
    assert choose_variant("2.9.1", None, "aarch64") == "cpu"


def test_aarch64_gpu_never_gets_the_cpu_build() -> None:
    with pytest.raises(NoVariant, match=r"torch 2\.5 has no aarch64 CUDA wheel .*"
                                        r"releases with one: 2\.6 \(cu126\); 2\.7 \(cu128\)"):
        choose_variant("2.5.1", (12, 4), "aarch64")
    with pytest.raises(NoVariant, match=r"torch 2\.9 aarch64 wheels need CUDA >= 12\.8 "
                                        r"\(cu128, cu130\); torch 2\.13 is the newest"):
        choose_variant("2.9.1", (12, 6), "aarch64")


@pytest.mark.parametrize("torch_version", ["2.14.0", "1.13.1", "2.9.1+cu128", "latest", "2"])
def test_unknown_release_lists_the_known_ones(torch_version: str) -> None:
    with pytest.raises(ValueError, match=r"known releases: 2\.0, 2\.1, .*, 2\.13 "):
        choose_variant(torch_version, (12, 8))


def test_unknown_architecture_is_refused() -> None:
    with pytest.raises(ValueError, match=r"architecture 'ppc64le'"):
        choose_variant("2.9.1", (12, 8), "ppc64le")


def test_every_release_lists_sorted_cuda_variants() -> None:
    for release, arches in WHEEL_VARIANTS.items():
        assert "x86_64" in arches, release
        for variants in arches.values():
            numbers = [int(variant.removeprefix("cu")) for variant in variants]
            assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers), release


def test_cluster_is_held_back_by_its_weakest_driver() -> None:
    nodes = {
        "node1": (driver_cuda("driver-580-cuda130-rtx5090-rtx4090"), "x86_64"),
        "node2": (driver_cuda("driver-570-cuda128-a100"), "x86_64"),
        "node3": (driver_cuda("driver-550-cuda124-8xh100"), "x86_64"),
    }
    choice = choose_cluster_variant("2.6.0", nodes)
    assert choice == ClusterChoice(
        "cu124", {"node1": "cu124", "node2": "cu124", "node3": "cu124"}, "node3",
        "node3's driver (CUDA 12.4) holds the cluster at cu124; a driver supporting CUDA 12.6 "
        "would allow cu126")


def test_unlock_names_every_node_below_the_best_variant() -> None:
    nodes = {"a": ((13, 0), "x86_64"), "b": ((12, 6), "x86_64"), "c": ((12, 8), "x86_64")}
    choice = choose_cluster_variant("2.9.1", nodes)
    assert (choice.variant, choice.limiting_node) == ("cu126", "b")
    assert choice.unlock == ("the drivers of b (CUDA 12.6), c (CUDA 12.8) hold the cluster at "
                             "cu126; drivers supporting CUDA 13.0 there would allow cu130")


def test_cluster_at_its_best_has_nothing_to_unlock() -> None:
    choice = choose_cluster_variant("2.9.1", {"a": ((13, 0), "x86_64"), "b": ((13, 3), "x86_64")})
    assert (choice.variant, choice.limiting_node, choice.unlock) == ("cu130", None, None)


def test_mixed_gpu_and_cpu_cluster() -> None:
    nodes = {"gpu": (driver_cuda("driver-575-cuda129-8xb200"), "x86_64"),
             "cpu": (driver_cuda("no-devices-found"), "x86_64")}
    choice = choose_cluster_variant("2.8.0", nodes)
    assert choice.variant == "cu129"
    assert choice.per_node == {"gpu": "cu129", "cpu": "cpu"}


def test_cpu_only_cluster() -> None:
    choice = choose_cluster_variant("2.9.1", {"a": (None, "x86_64"), "b": (None, "aarch64")})
    assert choice == ClusterChoice("cpu", {"a": "cpu", "b": "cpu"}, None, None)


def test_too_old_node_is_named() -> None:
    nodes = {"new": ((13, 0), "x86_64"), "old": (driver_cuda("driver-525-cuda120-v100"), "x86_64")}
    with pytest.raises(NoVariant, match=r"^old: driver supports CUDA 12\.0; torch 2\.9"):
        choose_cluster_variant("2.9.1", nodes)


def test_mixed_architectures_share_a_variant_both_have() -> None:
    nodes = {"x86": ((13, 0), "x86_64"),
             "spark": (driver_cuda("dgx-spark-gb10-580-aarch64"), "aarch64")}
    assert choose_cluster_variant("2.8.0", nodes).variant == "cu129"
    # 2.11 has only cu130 for aarch64, which a CUDA 12.8 x86 driver cannot run.
    nodes["x86"] = ((12, 8), "x86_64")
    with pytest.raises(NoVariant, match=r"^x86: driver supports CUDA 12\.8; torch 2\.11 wheels "
                                        r"need CUDA >= 13\.0 \(cu130\)"):
        choose_cluster_variant("2.11.0", nodes)
    with pytest.raises(NoVariant, match=r"^spark: torch 2\.5 has no aarch64 CUDA wheel"):
        choose_cluster_variant("2.5.1", nodes)


def test_override_is_checked_against_every_gpu_node() -> None:
    nodes = {"a": ((12, 8), "x86_64"), "b": ((12, 6), "x86_64"), "c": (None, "x86_64")}
    choice = choose_cluster_variant("2.8.0", nodes, override="cu126")
    assert choice == ClusterChoice("cu126", {"a": "cu126", "b": "cu126", "c": "cpu"}, None, None)
    assert choose_cluster_variant("2.8.0", nodes, override="cpu").per_node == {
        "a": "cpu", "b": "cpu", "c": "cpu"}
    with pytest.raises(NoVariant, match=r"^b: driver supports CUDA 12\.6; cu128 needs CUDA >= "
                                        r"12\.8"):
        choose_cluster_variant("2.8.0", nodes, override="cu128")
    with pytest.raises(NoVariant, match=r"^a: torch 2\.8 has no cu124 wheel for x86_64 "
                                        r"\(it has: cu126, cu128, cu129\)"):
        choose_cluster_variant("2.8.0", nodes, override="cu124")
    with pytest.raises(ValueError, match=r"not a torch wheel variant: 'rocm6\.4'"):
        choose_cluster_variant("2.8.0", nodes, override="rocm6.4")
    with pytest.raises(ValueError, match=r"no node has a usable NVIDIA driver"):
        choose_cluster_variant("2.8.0", {"c": (None, "x86_64")}, override="cu126")


def test_empty_cluster_is_refused() -> None:
    with pytest.raises(ValueError, match=r"no nodes"):
        choose_cluster_variant("2.8.0", {})


def test_wheel_spec_and_index() -> None:
    assert wheel_spec("2.9.1", "cu128") == "torch==2.9.1+cu128"
    assert wheel_spec("2.13.0", "cpu") == "torch==2.13.0+cpu"
    assert index_url("cu128") == "https://download.pytorch.org/whl/cu128"
    assert index_url("cpu") == "https://download.pytorch.org/whl/cpu"
    with pytest.raises(ValueError, match=r"full torch version such as 2\.9\.1"):
        wheel_spec("2.9", "cu128")
    with pytest.raises(NoVariant, match=r"torch 2\.8 has no cu124 wheel; it has: cu126, cu128, "
                                        r"cu129, cpu"):
        wheel_spec("2.8.0", "cu124")


def test_version_py_of_the_real_cpu_wheel() -> None:
    text = (VERSION_PY / "torch-2.13.0+cpu.version.py.txt").read_text()
    assert parse_torch_version_py(text) == ("2.13.0+cpu", None)


def test_version_py_of_a_real_cuda_install() -> None:
    text = (VERSION_PY / "torch-2.7.1+cu126.version.py.txt").read_text()
    assert parse_torch_version_py(text) == ("2.7.1+cu126", "12.6")


def test_version_py_edge_cases() -> None:
    assert parse_torch_version_py("") == (None, None)
    # The unannotated form: literal assignments count, computed ones do not.
    assert parse_torch_version_py("__version__ = '2.4.1'\ncuda = get_cuda()\n") == ("2.4.1",
                                                                                   None)
    with pytest.raises(ValueError, match=r"torch/version.py is not Python"):
        parse_torch_version_py("__version__ = '2.4.1\n")
