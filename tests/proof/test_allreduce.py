"""The verification job: its pure helpers, and real torchrun launches on this machine (gloo)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from nodeprov.job.diagnose import diagnose

with warnings.catch_warnings():
    # torch warns on import when numpy is missing; the job needs no numpy.
    warnings.filterwarnings("ignore", message="Failed to initialize NumPy", category=UserWarning)
    torch = pytest.importorskip("torch", reason="the job needs torch (pip install torch)")
    from nodeprov.proof.allreduce import __main__ as job
    from nodeprov.proof.allreduce import steps, sweep

JOB = ("--module", "nodeprov.proof.allreduce")  # torchrun's arguments that start the job
LAUNCH_TIMEOUT = 180  # seconds; a hung launch fails the test instead of hanging the suite
# A failure that ends by itself ends well before what it would wait for otherwise (gloo's
# 30-minute default, the rendezvous's 600 s join timeout); the rest of the bound is for two
# torch imports on a loaded 2-core CI machine (42 s seen there, with three helpers' testbeds)
ENDS_BY_ITSELF = 120


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def torchrun(port: int, *args: str, nnodes: int = 1, nproc: int = 2,
             rdzv_conf: str = "") -> list[str]:
    command = [sys.executable, "-m", "torch.distributed.run", "--nnodes", str(nnodes),
               "--nproc-per-node", str(nproc), "--rdzv-backend", "c10d",
               "--rdzv-endpoint", f"127.0.0.1:{port}", "--rdzv-id", "nodeprov-test"]
    if rdzv_conf:
        command += ["--rdzv-conf", rdzv_conf]
    return command + list(args)


def run(command: list[str], **env: str) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.monotonic()
    done = subprocess.run(command, capture_output=True, text=True, timeout=LAUNCH_TIMEOUT,
                          env={**os.environ, **env}, check=False)
    return done, time.monotonic() - started


# --- pure helpers -------------------------------------------------------------------------------

def test_message_sizes_grow_by_the_factor_and_end_at_the_maximum() -> None:
    assert sweep.message_sizes(8, 1024, 4) == [8, 32, 128, 512, 1024]
    assert sweep.message_sizes(8, 512, 4) == [8, 32, 128, 512]
    assert sweep.message_sizes(8, 8, 4) == [8]


def test_message_sizes_are_whole_float32_elements() -> None:
    assert sweep.message_sizes(1, 10, 2) == [4, 8]
    assert all(size % 4 == 0 for size in sweep.message_sizes(3, 10**6, 3))


def test_expected_sum_is_one_to_n() -> None:
    assert [sweep.expected_sum(n) for n in (1, 2, 3, 8)] == [1, 3, 6, 36]


def test_bus_bandwidth_follows_nccl_tests() -> None:
    assert sweep.bus_bandwidth(10.0, 1) == 0.0
    assert sweep.bus_bandwidth(10.0, 2) == 10.0
    assert sweep.bus_bandwidth(10.0, 8) == pytest.approx(17.5)


def test_count_wrong_counts_every_wrong_element() -> None:
    right = torch.full((5,), 3.0)
    assert int(sweep.count_wrong(right, 3.0)) == 0
    wrong = right.clone()
    wrong[1], wrong[4] = 2.0, float("nan")
    assert int(sweep.count_wrong(wrong, 3.0)) == 2


def test_iterations_fit_the_time_box_but_never_drop_below_three() -> None:
    options = job.parse_args(["--backend", "gloo", "--result", "r.json"])
    assert (options.warmup, options.iters, options.seconds_per_size) == (5, 20, 0.5)
    assert sweep.iterations(0.0001, options) == (4, 20)  # fast ops: the full count
    assert sweep.iterations(0.05, options) == (2, 10)  # 10 ops fit in 0.5 s
    assert sweep.iterations(2.0, options) == (0, sweep.MIN_ITERS)
    unboxed = job.parse_args(["--backend", "gloo", "--result", "r.json",
                                    "--seconds-per-size", "0"])
    assert sweep.iterations(2.0, unboxed) == (4, 20)


def test_bad_options_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    for args in (["--min-bytes", "64", "--max-bytes", "8"], ["--factor", "1"], ["--warmup", "0"],
                 ["--seconds-per-size", "-1"], ["--seconds-per-size", "nan"]):
        with pytest.raises(SystemExit) as exit_info:
            job.parse_args(["--backend", "gloo", "--result", "r.json", *args])
        assert exit_info.value.code == 2
    assert "--min-bytes must not exceed --max-bytes" in capsys.readouterr().err


# --- a real two-rank run ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    result_file = tmp_path_factory.mktemp("job") / "result.json"
    done, seconds = run(torchrun(free_port(), *JOB, "--backend", "gloo",
                                 "--result", str(result_file), "--max-bytes", str(1024 * 1024),
                                 "--warmup", "2", "--iters", "5"))
    assert done.returncode == 0, done.stdout + done.stderr
    return {"file": json.loads(result_file.read_text()), "stdout": done.stdout,
            "seconds": seconds}


def test_two_ranks_pass_every_check(two_ranks: dict[str, Any]) -> None:
    result = two_ranks["file"]
    assert result["ok"] is True
    assert (result["backend"], result["world_size"], result["nnodes"]) == ("gloo", 2, 1)
    assert result["ddp"] == {"ok": True, "max_abs_diff": 0.0}
    assert result["wrong"] == 0
    assert result["hostnames"] == [socket.gethostname()] * 2
    assert result["torch"] == torch.__version__
    assert result["nccl"] is None
    assert result["gpus_checked"] == 0  # CPU only: the GPU check leaves the gloo job alone
    assert 0 < result["duration_s"] < LAUNCH_TIMEOUT


def test_two_ranks_sweep_every_size(two_ranks: dict[str, Any]) -> None:
    rows = two_ranks["file"]["sizes"]
    assert [row["bytes"] for row in rows] == [8 * 4**k for k in range(9)] + [1024 * 1024]
    for row in rows:
        assert row["count"] * 4 == row["bytes"]
        assert sweep.MIN_ITERS <= row["iters"] <= 5
        assert row["wrong"] == 0
        assert row["time_us"] > 0 and row["busbw_gbps"] > 0
        assert row["algbw_gbps"] == pytest.approx(row["bytes"] / row["time_us"] / 1e3)
        assert row["busbw_gbps"] == pytest.approx(row["algbw_gbps"] * 2 * (2 - 1) / 2)


def test_stdout_carries_the_same_result(two_ranks: dict[str, Any]) -> None:
    lines = [line for line in two_ranks["stdout"].splitlines()
             if line.startswith(job.RESULT_PREFIX)]
    assert len(lines) == 1  # local rank 0 only
    assert json.loads(lines[0][len(job.RESULT_PREFIX):]) == two_ranks["file"]


# --- the GPU check: a kernel on each local GPU, compared with the CPU ---------------------------

@pytest.fixture()
def fake_gpus(monkeypatch: pytest.MonkeyPatch) -> None:
    """Four "GPUs" served by the CPU: 0 and 3 compute right, 1 has no kernels, 2 returns zeros."""
    original = torch.Tensor.to

    def to(tensor: Any, device: Any, *args: Any, **kwargs: Any) -> Any:
        if device == "cuda:1":
            raise RuntimeError("CUDA error: no kernel image is available for execution on the "
                               "device\nCUDA kernel errors might be asynchronously reported")
        if device in ("cuda:0", "cuda:2", "cuda:3"):
            return tensor.clone() * (0 if device == "cuda:2" else 1)
        return original(tensor, device, *args, **kwargs)

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda index: (12, 0))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index: "NVIDIA GeForce RTX 5090")
    monkeypatch.setattr(torch.Tensor, "to", to)


@pytest.mark.usefixtures("fake_gpus")
def test_gpu_check_names_each_failing_gpu_and_its_cause() -> None:
    checked, failed = steps.check_gpus(0, 1)
    assert checked == 4
    assert failed == [
        "GPU 1 (NVIDIA GeForce RTX 5090, sm_120): CUDA error: no kernel image is available for "
        "execution on the device",
        "GPU 2 (NVIDIA GeForce RTX 5090, sm_120): wrong result 1024.0 (CPU: 1572352.0)"]
    # local ranks share the GPUs: rank 1 of 2 checks GPUs 1 and 3
    assert steps.check_gpus(1, 2) == (2, failed[:1])


@pytest.mark.usefixtures("fake_gpus")
def test_a_failed_gpu_check_stops_the_job_before_any_collective(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    monkeypatch.setenv("LOCAL_RANK", "0")
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "1")
    assert job.main(["--backend", "gloo", "--result", str(tmp_path / "r.json")]) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 2 and all(line.startswith("NODEPROV_GPU_CHECK FAILED GPU ")
                                   for line in lines)
    found = diagnose("\n".join(lines), node="gpu1")
    assert found is not None and found.item == "venv"
    assert not (tmp_path / "r.json").exists()


def test_gpu_check_on_a_cpu_node_checks_nothing() -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert steps.check_gpus(0, 1) == (0, [])


# --- failures end quickly, non-zero, with output diagnose() understands --------------------------

def test_missing_socket_interface_fails_fast(tmp_path: Path) -> None:
    result_file = tmp_path / "result.json"
    done, seconds = run(torchrun(free_port(), *JOB, "--backend", "gloo",
                                 "--result", str(result_file)),
                        GLOO_SOCKET_IFNAME="nodeprov-missing0")
    assert done.returncode != 0
    assert seconds < ENDS_BY_ITSELF
    assert not result_file.exists()
    found = diagnose(done.stderr)
    assert found is not None and found.item == "nccl_env"


def test_a_node_that_never_joins_times_out_the_rendezvous(tmp_path: Path) -> None:
    result_file = tmp_path / "result.json"
    done, seconds = run(torchrun(free_port(), *JOB, "--backend", "gloo",
                                 "--result", str(result_file),
                                 nnodes=2, nproc=1, rdzv_conf="join_timeout=5"))
    assert done.returncode != 0
    assert seconds < ENDS_BY_ITSELF
    found = diagnose(done.stderr)
    assert found is not None and found.item == "firewall"


@pytest.fixture
def silent_peer() -> Iterator[int]:
    """A second 'node' that joins the rendezvous but never starts the job."""
    port = free_port()
    peer = subprocess.Popen(torchrun(port, "--no-python", "sleep", str(LAUNCH_TIMEOUT),
                                     nnodes=2, nproc=1),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        yield port
    finally:
        os.killpg(peer.pid, signal.SIGTERM)  # its own session: the agent and its sleep
        peer.wait(timeout=30)


def test_job_timeout_bounds_a_missing_peer(silent_peer: int, tmp_path: Path) -> None:
    result_file = tmp_path / "result.json"
    done, seconds = run(torchrun(silent_peer, *JOB, "--backend", "gloo",
                                 "--result", str(result_file), "--timeout", "5",
                                 nnodes=2, nproc=1))
    assert done.returncode != 0
    # the job's 5 s ended it, not the peer leaving after LAUNCH_TIMEOUT: the margin is for two
    # torch imports and a rendezvous on a loaded 2-core CI machine
    assert seconds < ENDS_BY_ITSELF
    assert not result_file.exists()
    found = diagnose(done.stderr)
    assert found is not None and found.item == "job"
