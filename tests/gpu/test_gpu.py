"""nvidia-smi parsing on real recorded outputs (tests/data/nvidia-smi, sources in its README)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nodeprov.gpu import Gpu, GpuInfo, parse_nvidia_smi, read_gpus
from nodeprov.gpu.nvidia import parse_proc_version
from nodeprov.gpu.pci import parse_pci_gpus

DATA = Path(__file__).parents[1] / "data" / "nvidia-smi"
# the query, with compute_cap or without; a record of a driver before 510 has both: the first
# rejected, the second what facts.sh prints as nvidia_query
QUERY_PROMPT = re.compile(r"^\$ nvidia-smi --query-gpu=index,name,uuid,memory\.total,driver_version"
                          r"(?:,compute_cap)? --format=csv,noheader\n", re.MULTILINE)


def recorded(name: str) -> tuple[str, str]:
    """(header output, query output) of a recorded case; a failure prints the same to both."""
    text = (DATA / f"{name}.txt").read_text()
    body = "".join(line for line in text.splitlines(keepends=True) if not line.startswith("# "))
    header, *queries = QUERY_PROMPT.split(body.removeprefix("$ nvidia-smi\n"))
    return header, queries[-1] if queries else header


def parse_recorded(name: str) -> GpuInfo | None:
    return parse_nvidia_smi(*recorded(name))


# name -> (driver version, max CUDA, memory MiB per GPU, MIG enabled)
PARSED: dict[str, tuple[str, tuple[int, int], list[int | None], bool]] = {
    "driver-418-cuda101-t4": ("418.67", (10, 1), [15079], False),
    "driver-440-cuda102-laptop": ("440.100", (10, 2), [7973], False),
    "driver-450-cuda110-titanxp": ("450.57", (11, 0), [12196], False),
    "driver-450-cuda110-8xa100-mig": ("450.80.02", (11, 0), [40537] * 8, True),
    "driver-470-cuda114-laptop": ("470.63.01", (11, 4), [16116], False),
    "driver-525-cuda120-v100": ("525.105.17", (12, 0), [32768], False),
    "driver-535-cuda122-2xa100-mig-on-one": ("535.129.03", (12, 2), [40960, 40960], True),
    "driver-550-cuda124-8xh100": ("550.90.07", (12, 4), [81559] * 8, False),
    "driver-560-cuda126-5-mixed": ("560.35.03", (12, 6), [6144, 12288, 12288, 8192, 8192],
                                   False),
    "driver-570-cuda128-a100": ("570.124.06", (12, 8), [40960], False),
    "driver-575-cuda129-8xb200": ("575.57.08", (12, 9), [183359] * 8, False),
    "driver-580-cuda130-rtx5090-rtx4090": ("580.82.09", (13, 0), [32607, 24564], False),
    "dgx-spark-gb10-580-aarch64": ("580.95.05", (13, 0), [None], False),
    "jetson-orin-540-cuda126": ("540.4.0", (12, 6), [None], False),
    "driver-610-cuda133-kmd-umd-header": ("610.43.02", (13, 3), [12227], False),
    "wsl-smi-530-driver-531-cuda121": ("531.68", (12, 1), [8192], False),
    # issue #24's probe of cluster GPUs: drivers 470 to 610 (sources in the README)
    "driver-470-cuda114-8xv100": ("470.182.03", (11, 4), [32510] * 8, False),
    "driver-470-cuda114-a10g": ("470.256.02", (11, 4), [22731], False),
    "driver-535-cuda122-a10g": ("535.247.01", (12, 2), [23028], False),
    "driver-550-cuda124-2xh100-nvl": ("550.54.14", (12, 4), [95830] * 2, False),
    "driver-550-cuda124-8xrtx4090": ("550.127.05", (12, 4), [24564] * 8, False),
    "driver-550-cuda124-8xv100": ("550.127.05", (12, 4), [16384] * 8, False),
    "driver-550-cuda124-a10": ("550.90.12", (12, 4), [23028], False),
    "driver-550-cuda124-h200": ("550.90.12", (12, 4), [143771], False),
    "driver-550-cuda124-l40s": ("550.127.05", (12, 4), [46068], False),
    "driver-555-cuda125-4xa100-sxm4": ("555.42.02", (12, 5), [81920] * 4, False),
    "driver-565-cuda127-8xh100-sxm": ("565.57.01", (12, 7), [81559] * 8, False),
    "driver-570-cuda128-h200": ("570.86.15", (12, 8), [143771], False),
    "driver-570-cuda128-rtx5090": ("570.124.06", (12, 8), [32607], False),
    "driver-580-cuda130-a100-sxm4": ("580.126.09", (13, 0), [40960] * 2, False),
    "driver-580-cuda130-b200": ("580.95.05", (13, 0), [183359] * 2, False),
    "driver-580-cuda130-h200-recorded": ("580.159.04", (13, 0), [143771], False),
    "driver-590-cuda131-rtx6000d": ("590.44.01", (13, 1), [85651] * 2, False),
    "driver-595-cuda132-rtx5090": ("595.71.05", (13, 2), [32607], False),
    "driver-610-cuda133-b200": ("610.43.02", (13, 3), [183359] * 2, False),
    "gh200-550-cuda124-aarch64": ("550.127.05", (12, 4), [97871], False),
}
# nvidia-smi says there is no usable driver: parse_nvidia_smi gives None, and read_gpus decides
# (a problem, never a CPU node, since nvidia-smi is installed: test_installed_nvidia_smi...)
NO_DRIVER = ["failed-cannot-communicate", "no-devices-found", "command-not-found-bash",
             "command-not-found-ubuntu", "wsl-failed-cannot-communicate"]
REFUSED = {
    "driver-384-no-cuda-version": r"driver 384\.66 is too old to report its CUDA version",
    "driver-575-cuda-na": r"reports CUDA Version N/A: its CUDA library \(libcuda\.so\)",
    "failed-nvml-version-mismatch": r"version mismatch \(reboot the node",
}


def test_every_recorded_output_is_checked_and_names_its_source() -> None:
    files = {path.stem for path in DATA.glob("*.txt")}
    assert files == set(PARSED) | set(NO_DRIVER) | set(REFUSED)
    for name in files:
        # a public page, or what scripts/gpu-proof.sh recorded on a lent GPU machine
        assert (DATA / f"{name}.txt").read_text().startswith(
            ("# source: https://github.com/", "# source: tests/data/gpu-proof/"))


@pytest.mark.parametrize("name", sorted(PARSED))
def test_recorded_output_parses(name: str) -> None:
    driver_version, cuda_version, memory, mig = PARSED[name]
    info = parse_recorded(name)
    assert info is not None
    assert (info.driver_version, info.cuda_version, info.mig) == (driver_version, cuda_version,
                                                                  mig)
    assert info.count == len(memory)
    assert [gpu.memory_mib for gpu in info.gpus] == memory
    assert [gpu.index for gpu in info.gpus] == list(range(len(memory)))


@pytest.mark.parametrize("name", NO_DRIVER)
def test_no_usable_driver_means_a_cpu_node(name: str) -> None:
    assert parse_recorded(name) is None


def test_empty_output_means_a_cpu_node() -> None:
    # facts.sh prints nothing when nvidia-smi is not on PATH.
    assert parse_nvidia_smi("", "") is None


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_output_that_cannot_be_trusted_is_refused(name: str) -> None:
    with pytest.raises(ValueError, match=REFUSED[name]):
        parse_recorded(name)


def test_gpu_rows_keep_names_and_uuids_from_the_query() -> None:
    info = parse_recorded("driver-560-cuda126-5-mixed")
    assert info is not None
    assert info.gpus[3] == Gpu(3, "NVIDIA GeForce RTX 3060 Ti", "GPU-unrecorded-3", 8192)
    assert [gpu.name for gpu in info.gpus].count("NVIDIA GeForce RTX 3060") == 2


def test_wsl_reports_the_driver_not_the_nvidia_smi_version() -> None:
    info = parse_recorded("wsl-smi-530-driver-531-cuda121")
    assert info is not None and info.driver_version == "531.68"


def test_mig_counts_physical_gpus() -> None:
    # Eight physical A100s, seven with MIG on (one MIG device exists): count stays 8.
    info = parse_recorded("driver-450-cuda110-8xa100-mig")
    assert info is not None and info.count == 8 and info.mig


def test_pending_mig_change_is_refused() -> None:
    # The 8x A100 record, GPU 7's MIG cell edited to the "Disabled*" a pending change shows.
    header, query = recorded("driver-450-cuda110-8xa100-mig")
    enabled, pending = "              Enabled |", "            Disabled* |"
    last = header.rindex(enabled)
    edited = header[:last] + pending + header[last + len(enabled):]
    with pytest.raises(ValueError, match=r"GPU 7 has a MIG mode change pending a reset"):
        parse_nvidia_smi(edited, query)


def test_query_without_units_and_with_unified_memory() -> None:
    header, _ = recorded("driver-570-cuda128-a100")
    info = parse_nvidia_smi(header, "0, NVIDIA A100-SXM4-40GB, GPU-x, 40960, 570.124.06\n")
    assert info is not None and info.gpus[0].memory_mib == 40960
    info = parse_nvidia_smi(header, "0, NVIDIA A100-SXM4-40GB, GPU-x, [N/A], 570.124.06\n")
    assert info is not None and info.gpus[0].memory_mib is None


@pytest.mark.parametrize(("query", "message"), [
    ("", r"listed no GPU"),
    ("0, NVIDIA A100-SXM4-40GB, GPU-x, 40960 MiB\n", r"unexpected line"),
    ("0, A, GPU-x, 1 MiB, 570.124.06\n0, B, GPU-y, 1 MiB, 570.124.06\n", r"index twice"),
    ("0, NVIDIA A100-SXM4-40GB, GPU-x, 40960 MiB, 575.57.08\n",
     r"header says driver 570\.124\.06 but the query says 575\.57\.08"),
    # untrusted fields of the wrong shape: a terminal escape in the name, a UUID with a space
    # or a slash, a memory size that is no size, an index that is no small number
    ("0, NVIDIA \x1b[2J A100, GPU-x, 40960 MiB, 570.124.06\n", r"unexpected line"),
    ("0, NVIDIA A100, GPU x/../y, 40960 MiB, 570.124.06\n", r"unexpected line"),
    ("0, NVIDIA A100, GPU-x, lots, 570.124.06\n", r"unexpected line"),
    ("9999, NVIDIA A100, GPU-x, 40960 MiB, 570.124.06\n", r"unexpected line"),
])
def test_query_output_that_does_not_fit_is_refused(query: str, message: str) -> None:
    header, _ = recorded("driver-570-cuda128-a100")
    with pytest.raises(ValueError, match=message):
        parse_nvidia_smi(header, query)


def test_outputs_that_disagree_about_a_driver_are_refused() -> None:
    _, query = recorded("driver-570-cuda128-a100")
    with pytest.raises(ValueError, match=r"plain nvidia-smi printed '' but the query listed"):
        parse_nvidia_smi("", query)


def test_unknown_output_is_refused_with_its_first_line() -> None:
    with pytest.raises(ValueError, match=r"cannot understand nvidia-smi output: 'Segmentation"):
        parse_nvidia_smi("Segmentation fault (core dumped)\n", "")


# --- the whole node: PCI bus, kernel module, ROCm (tests/data/gpu-node, sources in its README) --

NODE = Path(__file__).parents[1] / "data" / "gpu-node"
_DMESG = re.compile(r"pci (\S+): \[([0-9a-f]{4}):([0-9a-f]{4})\] type 00 class (0x[0-9a-f]{6})")
_LSPCI = re.compile(r"(\S+) .*\[([0-9a-f]{4})\]: .*\[([0-9a-f]{4}):([0-9a-f]{4})\]")
_JSON = re.compile(r'"pci_address":"(\S+)",\s+"vendor_id":"(\w+)",\s+"device_id":"(\w+)",\s+'
                   r'"pci_class":"[^"]*\[(\w+)\]"')


def node_text(name: str) -> str:
    return "".join(line for line in (NODE / name).read_text().splitlines(keepends=True)
                   if not line.startswith("# "))


def as_sysfs(name: str) -> str:
    """A recorded PCI listing as facts.sh prints /sys/bus/pci/devices (slot vendor device
    class). dmesg prints those very values; lspci -nn and the JSON give the class without its
    programming interface, taken as 00 (what GPUs report), and the slot without its domain,
    taken as 0000."""
    text = node_text(name)
    lines = [f"{slot} 0x{vendor} 0x{device} {pci_class}"
             for slot, vendor, device, pci_class in _DMESG.findall(text)]
    lines += [f"0000:{slot} 0x{vendor} 0x{device} 0x{pci_class}00"
              for slot, pci_class, vendor, device in _LSPCI.findall(text)]
    lines += [f"0000:{slot} 0x{vendor} 0x{device} 0x{pci_class}00"
              for slot, vendor, device, pci_class in _JSON.findall(text)]
    assert lines, name
    return "\n".join(lines)


def test_every_gpu_node_record_names_its_source() -> None:
    readme = (NODE / "README.md").read_text()
    for path in [*NODE.glob("*.txt"), *NODE.glob("*.csv")]:
        # NVIDIA's own lists are on its sites, not on GitHub
        assert path.read_text().startswith("# source: https://"), path.name
        assert f"| {path.name} |" in readme, path.name


@pytest.mark.parametrize(("name", "expected"), [
    ("pci-dmesg-lake10.txt", [("0000:3b:00.0", "nvidia", "0x1e30")]),
    ("pci-lspci-egpu-switcher22.txt", [("0000:02:00.0", "nvidia", "0x174d"),
                                       ("0000:08:00.0", "nvidia", "0x13c2")]),
    ("pci-mi325x-cloudstack11701.txt", [("0000:05:00.0", "amd", "0x74a5"),
                                        ("0000:15:00.0", "amd", "0x74a5")]),
])
def test_gpus_on_the_pci_bus_without_any_driver(name: str,
                                                expected: list[tuple[str, str, str]]) -> None:
    gpus = parse_pci_gpus(as_sysfs(name))
    assert [(gpu.slot, gpu.vendor, gpu.device_id) for gpu in gpus] == expected


def test_a_pci_line_of_another_shape_is_refused() -> None:
    with pytest.raises(ValueError, match="unexpected pci_devices line"):
        parse_pci_gpus("0000:3b:00.0 10de 1e30 0x030000")


@pytest.mark.parametrize(("name", "version"), [
    ("proc-nvidia-384-neofetch876.txt", "384.98"),
    ("proc-nvidia-open-565-nixgl186.txt", "565.57.01"),
])
def test_kernel_module_version(name: str, version: str) -> None:
    assert parse_proc_version(node_text(name)) == version


def test_broken_driver_on_a_gpu_node_is_a_problem_not_a_cpu_node() -> None:
    header, _ = recorded("failed-cannot-communicate")
    pci = as_sysfs("pci-dmesg-lake10.txt")
    info, accelerators = read_gpus({"nvidia_smi": header, "nvidia_query": header,
                                    "pci_devices": pci})
    assert info is None
    assert accelerators.problem is not None
    assert accelerators.problem.startswith("driver not loaded: reboot after the driver update?")


def test_no_driver_at_all_on_a_gpu_node_is_a_problem() -> None:
    header, query = recorded("command-not-found-bash")
    info, accelerators = read_gpus({"nvidia_smi": header, "nvidia_query": query,
                                    "pci_devices": as_sysfs("pci-lspci-egpu-switcher22.txt")})
    assert info is None and accelerators.problem == (
        "driver not loaded: NVIDIA GPU [0x174d] at 0000:02:00.0 but no NVIDIA kernel module "
        "(reboot after the driver update? or install the driver)")


def test_nvml_mismatch_names_the_cause() -> None:
    text = node_text("nvml-mismatch-580-truenas19.txt")
    smi, _, proc = text.removeprefix("$ nvidia-smi\n").partition(
        "$ cat /proc/driver/nvidia/version\n")
    info, accelerators = read_gpus({"nvidia_smi": smi, "nvidia_query": smi, "nvidia_proc": proc})
    assert info is None and accelerators.kernel_module == "580.173.02"
    assert accelerators.problem is not None
    assert accelerators.problem.startswith("NVML/driver version mismatch")


def test_a_module_other_than_the_one_nvidia_smi_reports_is_a_mismatch() -> None:
    header, query = recorded("driver-575-cuda129-8xb200")
    info, accelerators = read_gpus({
        "nvidia_smi": header, "nvidia_query": query,
        "nvidia_proc": node_text("proc-nvidia-open-565-nixgl186.txt")})
    assert info is not None and accelerators.problem == (
        "NVML/driver version mismatch: kernel module 565.57.01, nvidia-smi reports 575.57.08; "
        "reboot the node")


def test_rocm_version_and_an_amd_gpu_without_rocm() -> None:
    mi325x = as_sysfs("pci-mi325x-cloudstack11701.txt")
    _, with_rocm = read_gpus({"pci_devices": mi325x,
                              "rocm_version": node_text("rocm-info-version-7.14.txt")})
    assert with_rocm.rocm == (7, 14, 0) and with_rocm.problem is None
    _, without = read_gpus({"pci_devices": mi325x,
                            "amd_smi": node_text("amd-smi-version-rocm-na.txt")})
    assert without.rocm is None
    assert without.problem is not None and without.problem.startswith(
        "AMD GPU [0x74a5] at 0000:05:00.0 but no ROCm")


def test_query_with_compute_capability() -> None:
    header, query = recorded("driver-550-cuda124-8xh100")
    with_cap = "\n".join(f"{line}, 9.0" for line in query.strip().splitlines())
    info = parse_nvidia_smi(header, with_cap)
    assert info is not None and {gpu.compute_capability for gpu in info.gpus} == {(9, 0)}
    unknown = parse_nvidia_smi(header, query.strip().splitlines()[0] + ", [N/A]")
    assert unknown is not None and unknown.gpus[0].compute_capability is None
    with pytest.raises(ValueError, match="compute capability '9' for GPU 0"):
        parse_nvidia_smi(header, query.strip().splitlines()[0] + ", 9")


def test_a_driver_version_of_another_shape_is_refused() -> None:
    header, query = recorded("driver-570-cuda128-a100")
    with pytest.raises(ValueError, match=r"reports driver version '570\.124\.06;rm'"):
        parse_nvidia_smi(header.replace("570.124.06", "570.124.06;rm"), query)


@pytest.mark.parametrize(("name", "cause"), [
    ("nvidia-smi-gpu-lost-marian251.txt", "a GPU fell off the bus (nvidia-smi: GPU is lost)"),
    ("nvidia-smi-device-handle-syno22.txt", "nvidia-smi cannot reach a GPU (Unable to determine "
                                            "the device handle for GPU0000:07:00.0: Unknown"),
    ("nvidia-smi-no-libnvidia-ml-dakota373.txt", "the driver's user-space libraries are missing"),
])
def test_a_failing_nvidia_smi_on_a_gpu_node_names_the_cause(name: str, cause: str) -> None:
    smi = node_text(name).removeprefix("$ nvidia-smi\n")
    info, accelerators = read_gpus({"nvidia_smi": smi, "nvidia_query": smi,
                                    "nvidia_proc": node_text("proc-nvidia-384-neofetch876.txt")})
    assert info is None
    assert accelerators.problem is not None and accelerators.problem.startswith(cause)


# the first line of /etc/nv_tegra_release on JetPack 6.2 (Orin), as public reports print it
L4T_R36 = ("# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, "
           "DATE: Wed Jan  8 01:49:37 UTC 2025")


@pytest.mark.parametrize(("sections", "l4t"), [
    # JetPack 6: nvidia-smi works, the GPU is "Orin (nvgpu)"
    ({"nvidia_smi": recorded("jetson-orin-540-cuda126")[0],
      "nvidia_query": recorded("jetson-orin-540-cuda126")[1], "tegra": L4T_R36}, "L4T R36.4.3"),
    # an image without the release file: the GPU's name still says it
    ({"nvidia_smi": recorded("jetson-orin-540-cuda126")[0],
      "nvidia_query": recorded("jetson-orin-540-cuda126")[1]}, "L4T"),
    # JetPack 5: no nvidia-smi, no GPU on PCI; the kernel says Tegra (jetsonhacks/jetsonUtilities#4)
    ({"kernel": "4.9.140-tegra"}, "L4T"),
])
def test_a_jetson_before_thor_is_a_gpu_node_pytorchs_wheels_cannot_serve(
        sections: dict[str, str], l4t: str) -> None:
    # PyTorch's aarch64 wheels are SBSA builds: they would install on an Orin and not run
    info, accelerators = read_gpus(sections)
    assert info is None
    assert accelerators.problem is not None and accelerators.problem.startswith(
        f"a Jetson GPU ({l4t}): PyTorch's aarch64 wheels are built for servers (SBSA)")


def test_thor_and_other_nodes_are_not_jetson_problems() -> None:
    thor = {"tegra": "# R38 (release), REVISION: 2.0, GCID: 1, BOARD: generic, EABI: aarch64",
            "kernel": "6.8.12-tegra"}
    assert read_gpus(thor)[1].problem is None
    assert read_gpus({"kernel": "6.1.0-13-amd64"})[1].problem is None
