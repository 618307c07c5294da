"""diagnose() on real failure output (sources in data/README.md)."""

from pathlib import Path

import pytest

from nodeprov.job.diagnose import Diagnosis, diagnose, diagnose_nodes

DATA = Path(__file__).parent / "data"

# file -> (item, a word the cause must name, a word the evidence line must hold)
EXPECTED = {
    "local_venv_no_torchrun.txt": ("venv", "torch", "No such file"),
    "issue_no_module_torch.txt": ("venv", "torch", "No module named 'torch'"),
    "issue_cuda_driver_insufficient.txt": ("venv", "driver", "insufficient"),
    "issue_cuda_driver_too_old.txt": ("venv", "driver", "too old"),
    "issue_duplicate_gpu.txt": ("job", "GPU", "Duplicate GPU"),
    "issue_invalid_device_ordinal.txt": ("job", "GPU the node does not have",
                                         "invalid device ordinal"),
    "local_cpu_torch_nccl.txt": ("venv", "CPU build", "_cuda_setDevice"),
    "issue_no_kernel_image.txt": ("venv", "architecture", "no kernel image"),
    "issue_sm120_not_compatible.txt": ("venv", "architecture", "no kernel image"),
    "issue_nvml_mismatch.txt": ("venv", "NVML/driver version mismatch", "mismatch"),
    "issue_ecc_uncorrectable.txt": ("gpu", "GPU", "uncorrectable ECC error"),
    "local_gloo_ifname_missing.txt": ("nccl_env", "GLOO_SOCKET_IFNAME", "nodeprov0"),
    "issue_nccl_no_socket_interface.txt": ("nccl_env", "NCCL_SOCKET_IFNAME", "no socket"),
    "issue_gloo_loopback.txt": ("hosts", "127.0.1.1", "[127.0.1.1]"),
    "issue_nccl_loopback.txt": ("hosts", "loopback", "127.0.0.1<45069>"),
    "local_rdzv_unresolvable.txt": ("hosts", "/etc/hosts", "gai error"),
    "issue_host_not_found.txt": ("hosts", "/etc/hosts", "host not found"),
    "issue_gloo_pair_no_error.txt": ("firewall", "GLOO_SOCKET_IFNAME", "connectFullMesh"),
    "issue_gloo_connect_timeout.txt": ("firewall", "ephemeral", "Connect timeout"),
    "issue_nccl_no_route.txt": ("firewall", "NCCL_SOCKET_IFNAME", "unhandled system error"),
    "issue_nccl_poll_connect.txt": ("firewall", "ephemeral", "No route to host"),
    "issue_nccl_connect_refused.txt": ("firewall", "ephemeral", "Connection refused"),
    "issue_rdzv_connection_error.txt": ("firewall", "rendezvous", "timed out"),
    "issue_rdzv_no_route.txt": ("firewall", "rendezvous", "failed to connect"),
    "local_rdzv_join_timeout.txt": ("firewall", "rendezvous", "RendezvousTimeoutError"),
    "local_store_wait_timeout.txt": ("job", "never joined", "wait timeout"),
    "local_run_rank_raises.txt": ("job", "peer rank ended first", "Connection closed by peer"),
    # by itself a network question; run's failures read it beside the peer's exit 0
    # (tests/userjob/test_run_flow.py)
    "local_run_peer_finished.txt": ("firewall", "gloo peers", "Connection reset by peer"),
    # pytorch/examples' and ml-engineering's scripts through nodeprov run (data/README.md)
    "local_run_missing_module.txt": ("venv", "neither in the node's venv",
                                     "No module named 'psutil'"),
    "local_run_no_such_script.txt": ("job", "not on the node", "can't open file"),
}


def test_every_recorded_output_has_an_expectation() -> None:
    assert sorted(p.name for p in DATA.glob("*.txt")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recorded_output_maps_to_its_item(name: str) -> None:
    item, cause_word, evidence_word = EXPECTED[name]
    found = diagnose((DATA / name).read_text(encoding="utf-8"), node="node2")
    assert found is not None
    assert found.item == item
    assert cause_word in found.cause
    assert evidence_word in found.evidence
    assert "\n" not in found.cause + found.fix + found.evidence


def test_fix_names_the_node() -> None:
    found = diagnose("ModuleNotFoundError: No module named 'torch'", node="gpu7")
    assert found is not None
    assert found.fix == "nodeprov apply --limit gpu7 --tags venv"


def test_the_more_specific_rule_wins() -> None:
    # The name-resolution failure is what made the rendezvous time out.
    output = (DATA / "local_rdzv_unresolvable.txt").read_text(encoding="utf-8")
    assert "The client socket has timed out" in output
    found = diagnose(output)
    assert found is not None and found.item == "hosts"


def test_other_torch_modules_are_not_torch() -> None:
    found = diagnose("ModuleNotFoundError: No module named 'torchvision'", node="node2")
    assert found is not None and "torch is missing" not in found.cause
    assert found.fix.startswith("add its package to pip_packages in the inventory, then "
                                "nodeprov apply --limit node2 --tags venv")


@pytest.mark.parametrize("output", [
    "",
    "NODEPROV_RESULT {\"ok\": false}",
    "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB",
])
def test_unknown_output_gives_none(output: str) -> None:
    assert diagnose(output) is None


def test_diagnose_nodes_keeps_only_known_failures_in_order() -> None:
    found = diagnose_nodes({
        "node1": "all good",
        "node3": "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000",
        "node2": "torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError",
    })
    assert [(node, d.item) for node, d in found] == [("node3", "job"), ("node2", "firewall")]
    assert all(isinstance(d, Diagnosis) for _, d in found)
    assert "node3" in found[0][1].fix


def test_the_jobs_gpu_check_lines_are_diagnosed() -> None:
    # What the job (allreduce/steps.py) prints when a GPU fails its check: torch's error, or a
    # wrong result.
    kernel = ("NODEPROV_GPU_CHECK FAILED GPU 0 (NVIDIA GeForce RTX 5090, sm_120): CUDA error: "
              "no kernel image is available for execution on the device")
    found = diagnose(kernel, node="gpu3")
    assert found is not None and found.item == "venv"
    assert found.fix.startswith("nodeprov apply --limit gpu3 --tags venv")
    wrong = "NODEPROV_GPU_CHECK FAILED GPU 5 (NVIDIA H100, sm_90): wrong result 0.0 (CPU: 1.0)"
    found = diagnose(wrong, node="gpu3")
    assert found is not None and found.item == "gpu" and "gpu3" in found.fix


# What a script that asks CUDA for a device says, on torch's CPU build or with no GPU to see
ASKS_CUDA = ["local_run_gpu_script_on_cpu.log", "local_cpu_torch_nccl.txt",
             "issue_invalid_device_ordinal.txt"]


@pytest.mark.parametrize("name", ASKS_CUDA)
def test_a_script_that_asks_cuda_for_a_gpu_on_a_node_without_one_needs_a_gpu(name: str) -> None:
    found = diagnose((DATA / name).read_text(encoding="utf-8"), node="node2", gpus=0)
    assert found is not None and found.own
    assert (found.item, found.cause) == (
        "job", "the script needs a GPU (it asks CUDA for one) and this node has none")
    assert found.fix.startswith("run it on nodes with GPUs, or let it fall back to the CPU")


# What a script that asks torch.accelerator for a device says where there is none
ASKS_ACCELERATOR = ["local_accelerator_device_string.log",
                    "local_accelerator_backend_for_none.log",
                    "local_accelerator_set_device_index.log"]


@pytest.mark.parametrize("name", ASKS_ACCELERATOR)
def test_a_script_that_asks_torch_accelerator_for_a_gpu_on_a_node_without_one_needs_a_gpu(
        name: str) -> None:
    text = (DATA / name).read_text(encoding="utf-8")
    found = diagnose(text, node="node2", gpus=0)
    assert found is not None and found.own
    assert (found.item, found.cause) == (
        "job", "the script needs a GPU (it asks torch.accelerator for one) and this node has none")
    assert "torch.accelerator.is_available() is false" in found.fix
    # Where the node's GPUs are unknown or present, the same words are no proof of that.
    for gpus in (None, 8):
        other = diagnose(text, node="node2", gpus=gpus)
        assert other is None or "torch.accelerator" not in other.cause


# torch 2.13.0+cpu's own words on a testbed node: init_process_group("nccl"), tensor.cuda()
@pytest.mark.parametrize("said", ["RuntimeError: Distributed package doesn't have NCCL built in",
                                  "AssertionError: Torch not compiled with CUDA enabled"])
def test_the_nccl_backend_or_a_cuda_tensor_on_a_node_without_gpus_needs_a_gpu(said: str) -> None:
    found = diagnose(f"[rank0]:{said}", node="node1", gpus=0)
    assert found is not None and "needs a GPU" in found.cause and found.evidence.endswith(said)


@pytest.mark.parametrize("gpus", [None, 8])
def test_the_cpu_build_on_a_node_with_gpus_or_unknown_ones_is_the_venvs(gpus: int | None) -> None:
    text = (DATA / "local_run_gpu_script_on_cpu.log").read_text(encoding="utf-8")
    found = diagnose(text, node="node2", gpus=gpus)
    assert found is not None and found.item == "venv" and "CPU build" in found.cause


def test_a_peers_echo_is_not_the_nodes_own_cause() -> None:
    own = {name: diagnose((DATA / name).read_text(encoding="utf-8")) for name in EXPECTED}
    assert {name for name, found in own.items() if found is not None and not found.own} == {
        name for name, (item, cause, _) in EXPECTED.items()
        if item in ("firewall", "hosts") or cause in ("peer rank ended first", "never joined")}


def test_a_script_that_requires_local_rank_is_told_torchrun_sets_it_in_the_environment() -> None:
    # Swin-Transformer's argument parsing (data/README.md) under torchrun, on every node alike
    text = (DATA / "local_run_local_rank_required.log").read_text(encoding="utf-8")
    for gpus in (None, 0, 8):
        found = diagnose(text, node="node2", gpus=gpus)
        assert found is not None and found.own and found.item == "job"
        assert found.cause == (
            "the script requires --local_rank on its command line, which "
            "torch.distributed.launch gave it and torchrun does not: torchrun sets the "
            "LOCAL_RANK environment variable")
        assert "os.environ.get('LOCAL_RANK', 0)" in found.fix
        assert found.evidence.endswith(
            "error: the following arguments are required: --local_rank")
    # argparse's names for an option with both spellings, beside another missing argument
    dashed = ("train.py: error: the following arguments are required: --cfg, "
              "--local-rank/--local_rank")
    assert "LOCAL_RANK" in (diagnose(dashed) or Diagnosis("", "", "", "")).cause


@pytest.mark.parametrize("said", [
    # other arguments missing: the script's own, no hint (run's failures quote the line)
    (DATA / "local_run_usage_error.log").read_text(encoding="utf-8"),
    "train.py: error: the following arguments are required: --local_ranks_file",
    "train.py: error: argument --local_rank: invalid int value: 'x'",
])
def test_other_usage_errors_are_not_the_local_rank_argument(said: str) -> None:
    assert diagnose(said, node="node2", gpus=0) is None
