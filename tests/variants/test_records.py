"""The build nodeprov chooses for every recorded cluster node (tests/data/nvidia-smi) and torch
2.4, 2.9, 2.13 and 2.14, checked against what PyTorch published (the table, itself checked
against PyTorch's recorded index pages in test_index.py) and NVIDIA's driver rules.

Records whose query has no compute_cap get each GPU's capability from NVIDIA's list by model
(tests/data/gpu-node/cuda-gpus-nvidia.txt), as facts.sh gets it on the node: from nvidia-smi on
drivers from 510, from the CUDA probe before."""

from __future__ import annotations

import pytest

from nodeprov.variants.choose import NoVariant, choose_cluster_variant, known_builds
from nodeprov.variants.drivers import parse_driver
from nodeprov.variants.fit import NodeGpus
from tests.gpu.test_gpu import parse_recorded

MODELS = {"V100": (7, 0), "A10G": (8, 6), "A100": (8, 0), "H100": (9, 0), "H200": (9, 0),
          "B200": (10, 0), "RTX 5090": (12, 0), "RTX 6000D": (12, 0), "RTX 5070": (12, 0)}
RELEASES = ("2.4.1", "2.9.1", "2.13.0", "2.14.0")
# record -> the build for each of RELEASES; None: refused, with the reason in the error
EXPECTED = {
    "driver-470-cuda114-8xv100": ("cu118", None, None, None),  # 12.x needs >= 525.60.13
    "driver-470-cuda114-a10g": ("cu118", None, None, None),
    "driver-535-cuda122-a10g": ("cu124", "cu129", "cu129", "cu126"),
    "driver-550-cuda124-2xh100-nvl": ("cu124", "cu129", "cu129", "cu126"),
    "driver-550-cuda124-8xrtx4090": ("cu124", "cu129", "cu129", "cu126"),
    "driver-550-cuda124-8xv100": ("cu124", "cu129", "cu126", "cu126"),  # 2.13: no sm_70 past cu126
    "driver-550-cuda124-a10": ("cu124", "cu129", "cu129", "cu126"),
    "driver-550-cuda124-h200": ("cu124", "cu129", "cu129", "cu126"),
    "driver-550-cuda124-l40s": ("cu124", "cu129", "cu129", "cu126"),
    "driver-555-cuda125-4xa100-sxm4": ("cu124", "cu129", "cu129", "cu126"),
    "driver-565-cuda127-8xh100-sxm": ("cu124", "cu129", "cu129", "cu126"),
    "driver-570-cuda128-h200": ("cu124", "cu129", "cu129", "cu126"),
    "driver-570-cuda128-rtx5090": (None, "cu129", "cu129", None),  # 2.14: cu126 lacks sm_120
    "driver-580-cuda130-a100-sxm4": ("cu124", "cu130", "cu132", "cu132"),
    "driver-580-cuda130-b200": (None, "cu130", "cu132", "cu132"),  # 2.4: no sm_100, no PTX
    "driver-580-cuda130-h200-recorded": ("cu124", "cu130", "cu132", "cu132"),
    "driver-590-cuda131-rtx6000d": (None, "cu130", "cu132", "cu132"),
    "driver-595-cuda132-rtx5090": (None, "cu130", "cu132", "cu132"),
    "driver-610-cuda133-b200": (None, "cu130", "cu132", "cu132"),
    "gh200-550-cuda124-aarch64": (None, "cu129", "cu129", "cu126"),  # 2.4: no aarch64 CUDA
}


def node(name: str) -> NodeGpus:
    info = parse_recorded(name)
    assert info is not None
    gpus = tuple((gpu.name, gpu.compute_capability or next(
        capability for model, capability in MODELS.items() if model in gpu.name))
        for gpu in info.gpus)
    platform = "aarch64" if "aarch64" in name else "x86_64"
    return NodeGpus(platform, parse_driver(info.driver_version), info.cuda_version, gpus)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_build_for_each_recorded_node(name: str) -> None:
    for version, expected in zip(RELEASES, EXPECTED[name], strict=True):
        builds = known_builds(version)
        assert builds is not None
        if expected is None:
            with pytest.raises(NoVariant):
                choose_cluster_variant(builds, {"n": node(name)})
        else:
            assert choose_cluster_variant(builds, {"n": node(name)}).variant == expected, version
