"""A GPU that does not answer is never a CPU (WSL2, an installed nvidia-smi that fails, driver
files), and the compute capability is known on drivers before 510: read_gpus on recorded
outputs (tests/data/nvidia-smi) with the sections facts.sh adds (cuda_probe, gpu_files)."""

from __future__ import annotations

import pytest

from nodeprov.gpu import read_gpus
from tests.gpu.stand_in import DATA, recorded_commands
from tests.gpu.test_gpu import recorded

WSL_FILES = "/dev/dxg\n/usr/lib/wsl/lib/libcuda.so.1\n"
# the 8x V100 node on driver 470.182.03 (Jade 2): GV100 [Tesla V100 SXM2 32GB] is 0x1db5
V100_PCI = "".join(f"0000:{bus}:00.0 0x10de 0x1db5 0x030200\n"
                   for bus in ("06", "07", "0a", "0b", "85", "86", "89", "8a"))


def sections(name: str, **more: str) -> dict[str, str]:
    header, query = recorded(name)
    return {"nvidia_smi": header, "nvidia_query": query, **more}


@pytest.mark.parametrize("name", ["failed-cannot-communicate", "no-devices-found",
                                  "wsl-failed-cannot-communicate"])
def test_an_installed_nvidia_smi_that_fails_is_never_a_cpu_node(name: str) -> None:
    info, accelerators = read_gpus(sections(name))
    assert info is None and accelerators.problem is not None
    assert accelerators.problem.endswith(
        "; nvidia-smi is installed, so this node is not taken for a CPU node: if it has no "
        "NVIDIA GPU, set torch_cuda: cpu for it (or remove the NVIDIA driver)")


def test_wsl_gpu_the_windows_driver_does_not_answer() -> None:
    _, accelerators = read_gpus(sections("wsl-failed-cannot-communicate", gpu_files=WSL_FILES))
    assert accelerators.problem == (
        "a WSL2 GPU (/dev/dxg, /usr/lib/wsl/lib/libcuda.so.1) that nvidia-smi cannot reach: "
        "driver not loaded: reboot after the driver update? (nvidia-smi could not communicate "
        "with the NVIDIA driver). In WSL the driver is the Windows one: update it on Windows, run "
        "'wsl --shutdown', start the distribution again, and install no Linux NVIDIA driver "
        "inside WSL")


def test_driver_files_without_a_working_nvidia_smi() -> None:
    _, wsl = read_gpus(sections("command-not-found-bash", gpu_files=WSL_FILES))
    assert wsl.problem is not None and wsl.problem.startswith(
        "a WSL2 GPU (/dev/dxg, /usr/lib/wsl/lib/libcuda.so.1) but no nvidia-smi")
    _, native = read_gpus(sections("command-not-found-bash",
                                   gpu_files="/dev/nvidiactl\n/dev/nvidia0\n"))
    assert native.problem == ("NVIDIA device files (/dev/nvidia0, /dev/nvidiactl) but nvidia-smi "
                              "is unusable (it printed 'bash: nvidia-smi: command not found'); "
                              "reinstall the driver")
    # /dev/dxg alone: WSL2 with another vendor's GPU, no NVIDIA library: a CPU node
    assert read_gpus(sections("command-not-found-bash", gpu_files="/dev/dxg\n"))[1].problem \
        is None
    assert read_gpus(sections("command-not-found-bash"))[1].problem is None


def test_gpu_files_of_another_path_are_refused() -> None:
    with pytest.raises(ValueError, match=r"unexpected gpu_files line '/etc/shadow'"):
        read_gpus(sections("command-not-found-bash", gpu_files="/dev/dxg\n/etc/shadow\n"))


def capabilities(found: dict[str, str]) -> list[tuple[int, int] | None]:
    info, _ = read_gpus(found)
    assert info is not None
    return [gpu.compute_capability for gpu in info.gpus]


def test_driver_470_capabilities_from_the_cuda_probe() -> None:
    probe = "".join(f"device {index} 7.0\n" for index in range(8))
    assert capabilities(sections("driver-470-cuda114-8xv100", cuda_probe=probe)) == [(7, 0)] * 8


def test_driver_470_capabilities_from_pci_when_libcuda_does_not_load() -> None:
    missing = "error libcuda libcuda.so.1: cannot open shared object file: No such file\n"
    found = sections("driver-470-cuda114-8xv100", cuda_probe=missing, pci_devices=V100_PCI)
    assert capabilities(found) == [(7, 0)] * 8


def test_a_failing_cuinit_names_the_broken_driver() -> None:
    info, accelerators = read_gpus(sections("driver-470-cuda114-a10g",
                                            cuda_probe="error cuInit 100\n"))
    assert info is not None
    assert accelerators.problem == (
        "the NVIDIA driver 470.256.02 is broken on this node: cuInit failed with "
        "CUDA_ERROR_NO_DEVICE (100); reinstall the driver or reboot (dmesg shows NVRM errors)")


def test_why_a_capability_stays_unknown() -> None:
    info, _ = read_gpus(sections("driver-470-cuda114-a10g"))
    assert info is not None and info.gpus[0].compute_capability is None
    assert info.capability_note == (
        "nvidia-smi 470.256.02 has no compute_cap field (it came with R510), the CUDA driver API "
        "was not asked (no python3 on the node), and no NVIDIA PCI function is listed")


def test_an_old_nvidia_smi_in_front_of_a_newer_driver_is_named() -> None:
    # Composed from two real records: WSL's nvidia-smi 530.47 with driver 531.68, and the
    # query an nvidia-smi before R510 answers (facts.sh then asks without compute_cap).
    header, query = recorded("wsl-smi-530-driver-531-cuda121")
    info, _ = read_gpus({"nvidia_smi": header, "nvidia_query": query,
                         "cuda_probe": "error libcuda libcuda.so.1: not found\n"})
    assert info is not None and info.capability_note is not None
    assert info.capability_note.startswith(
        "nvidia-smi 530.47, older than its driver 531.68, has no compute_cap field")
    assert "before 510" not in info.capability_note


def test_the_driver_470_records_reject_compute_cap_as_driver_470_does() -> None:
    rejection = (DATA.parent / "nvidia-smi-query" / "compute-cap-rejected-470.txt").read_text()
    line = rejection.splitlines()[-1]
    assert line == 'Field "compute_cap" is not a valid field to query.'
    asked = ("--query-gpu=index,name,uuid,memory.total,driver_version,compute_cap "
             "--format=csv,noheader")
    for name in ("driver-470-cuda114-8xv100", "driver-470-cuda114-a10g"):
        assert recorded_commands(name)[asked] == line + "\n"
