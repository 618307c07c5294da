"""Compute capability where nvidia-smi has no compute_cap field: the CUDA probe's output and the
PCI device id table, checked against pci.ids and against real (device id, deviceQuery) pairs."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from nodeprov.gpu.capability import (
    CudaProbe,
    parse_cuda_probe,
    pci_capability,
    with_capabilities,
)
from nodeprov.gpu.nvidia import Gpu, GpuInfo
from nodeprov.gpu.pci import parse_pci_gpus

DATA = Path(__file__).parents[1] / "data" / "gpu-node"
# Chip families and the capability of their products in NVIDIA's lists
# (tests/data/gpu-node/cuda-gpus-nvidia.txt): the rule the table was derived with, read again
# from pci.ids' chip names.
FAMILIES = [(r"GK10[4-7]", (3, 0)), (r"GK11[0-9]B?|GK208B?|GK180", (3, 5)), (r"GK210", (3, 7)),
            (r"GM10[78]", (5, 0)), (r"GM20[046]", (5, 2)), (r"GP100", (6, 0)),
            (r"GP10[24678]B?", (6, 1)), (r"GV100", (7, 0)), (r"TU1[01][0-9]", (7, 5)),
            (r"GA100", (8, 0)), (r"GA10[2-7]B?", (8, 6)), (r"AD10[2-7]", (8, 9)),
            (r"GH100", (9, 0)), (r"GB10[02]", (10, 0)), (r"GB110", (10, 3)), (r"GB10B", (11, 0)),
            (r"GB20[2-7]", (12, 0)), (r"GB20B", (12, 1))]
NOT_A_GPU = re.compile(r"Audio|USB|PCIe host|NVSwitch|Bridge|SMBus|Serial|Ethernet|IDE|Controller|"
                       r"Coprocessor|Host|LPC|APU|SATA|Firewire|Co-processor|PCIe Switch", re.I)


def pci_ids_gpus() -> list[tuple[str, str, str]]:
    """(device id, chip, name) of the display devices pci.ids lists for NVIDIA."""
    rows = []
    for line in (DATA / "pci-ids-nvidia.txt").read_text().splitlines():
        match = re.match(r"\t([0-9a-f]{4})  (\S+)(.*)", line)
        if match and not NOT_A_GPU.search(match.group(3)):
            rows.append((f"0x{match.group(1)}", match.group(2), match.group(3)))
    return rows


def family(chip: str) -> tuple[int, int] | None:
    return next((capability for pattern, capability in FAMILIES
                 if re.fullmatch(pattern + r"(?:GL|GLM|M|BM)?", chip)), None)


def test_every_gpu_of_a_known_family_in_pci_ids_gets_its_family_capability() -> None:
    gpus = pci_ids_gpus()
    known = [(device, chip, family(chip)) for device, chip, _ in gpus if family(chip)]
    assert len(known) > 700
    wrong = [(device, chip, expected, pci_capability(device)) for device, chip, expected in known
             if pci_capability(device) != expected]
    assert wrong == []


def test_devices_of_unknown_families_stay_unknown() -> None:
    # Fermi, Tesla-era, Rubin (GR100): no capability is guessed for them
    unknown = [(device, chip) for device, chip, _ in pci_ids_gpus() if family(chip) is None
               and pci_capability(device) is not None]
    assert unknown == []
    assert pci_capability("0x1080") is None  # GF110 [GeForce GTX 580]
    assert pci_capability("0x3021") is None  # GR100 [PCIe Faber]


def test_table_agrees_with_deviceQuery_on_real_machines() -> None:
    lines = [line for line in (DATA / "pci-device-capability-gls.csv").read_text().splitlines()
             if not line.startswith("#")]
    rows = list(csv.DictReader(lines))
    assert len(rows) == 22
    for row in rows:
        device = "0x" + row["device_id"][2:6].lower()  # nvidia-smi -a: 0x233010DE
        major, minor = row["compute_cap"].split(".")
        assert pci_capability(device) == (int(major), int(minor)), row


def test_probe_output() -> None:
    assert parse_cuda_probe("") is None
    assert parse_cuda_probe("device 0 7.0\ndevice 1 8.6\n") == CudaProbe(((7, 0), (8, 6)))
    assert parse_cuda_probe("error cuInit 100\n") == CudaProbe(failed_call="cuInit", code=100)
    missing = parse_cuda_probe("error libcuda libcuda.so.1: cannot open shared object file: No "
                               "such file or directory")
    assert missing is not None and missing.failed_call == "libcuda" and missing.failure("470.1") \
        is None


@pytest.mark.parametrize("text", [
    "device 1 7.0\n",  # ordinals start at 0
    "device 0 7.0\ndevice 0 7.0\n",
    "device 0 seven\n",
    "device 0 7.0\nerror cuInit 100\n",
    "error cuInit abc\n",
    "error rm -rf 1\n",
    "\x1b[2Jdevice 0 7.0\n",
    "".join(f"device {i} 9.0\n" for i in range(65)),
])
def test_probe_output_of_another_shape_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="CUDA probe"):
        parse_cuda_probe(text)


def test_failing_cuinit_names_the_driver_and_the_error() -> None:
    probe = parse_cuda_probe("error cuInit 999\n")
    assert probe is not None
    assert probe.failure("470.182.03") == (
        "the NVIDIA driver 470.182.03 is broken on this node: cuInit failed with "
        "CUDA_ERROR_UNKNOWN (999); reinstall the driver or reboot (dmesg shows NVRM errors)")


def info(*names: str) -> GpuInfo:
    return GpuInfo("470.182.03", (11, 4),
                   tuple(Gpu(index, name, f"GPU-{index}", 32510) for index, name in
                         enumerate(names)), mig=False)


V100_PCI = "0000:06:00.0 0x10de 0x1db5 0x030200\n0000:07:00.0 0x10de 0x1db5 0x030200\n"


def test_capabilities_from_the_probe_then_from_pci() -> None:
    two = info("Tesla V100-SXM2...", "Tesla V100-SXM2...")
    probe = parse_cuda_probe("device 0 7.0\ndevice 1 7.0\n")
    filled = with_capabilities(two, probe, ())
    assert [gpu.compute_capability for gpu in filled.gpus] == [(7, 0), (7, 0)]
    # libcuda missing: the PCI ids of the same GPUs (0x1db5: GV100 [Tesla V100 SXM2 32GB])
    missing = CudaProbe(failed_call="libcuda", why="cannot open")
    filled = with_capabilities(two, missing, parse_pci_gpus(V100_PCI))
    assert [gpu.compute_capability for gpu in filled.gpus] == [(7, 0), (7, 0)]


def test_lists_of_another_length_serve_only_when_they_agree() -> None:
    two = info("A", "B")
    # MIG: CUDA lists one MIG device of the first GPU; all agree -> every GPU
    assert [gpu.compute_capability for gpu in with_capabilities(
        two, parse_cuda_probe("device 0 8.0\n"), ()).gpus] == [(8, 0), (8, 0)]
    mixed = parse_cuda_probe("device 0 8.0\ndevice 1 8.6\ndevice 2 7.5\n")
    assert [gpu.compute_capability for gpu in with_capabilities(two, mixed, ()).gpus] == \
        [None, None]


def test_known_capabilities_are_kept() -> None:
    known = GpuInfo("535.129.03", (12, 2), (Gpu(0, "H100", "GPU-0", 81559, (9, 0)),), False)
    assert with_capabilities(known, parse_cuda_probe("device 0 7.0\n"), ()) is known
