"""The job launcher's node side (launcher.py), run on this machine as a node runs it (python3 -I),
each in a network namespace of its own (the job lock is an abstract socket, one per namespace):
the job stops when nodeprov's heartbeats end or go silent and says why to the next run; one job
per node, and the second is told whose; the environment file; the deadline; the stop step;
each rank's own exit code through torchrun."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from nodeprov.job.diagnose import diagnose
from nodeprov.nodeside.launcher import Start

LAUNCHER = resources.files("nodeprov.nodeside").joinpath("launcher.py").read_text()
LOCKHOLDER = resources.files("nodeprov.nodeside").joinpath("lockholder.py").read_text()
TORCHRUN = Path(sys.executable).with_name("torchrun")
JOB = "echo up; exec sleep 300"  # the job: says it runs, then runs until stopped

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                                reason="needs root and unshare (a network namespace per test)")


def launcher(*args: str) -> list[str]:
    return [sys.executable, "-I", "-c", LAUNCHER, *args]


def start_argv(state: Path, run_id: str, *command: str, netns: int | None = None,
               **changed: Any) -> list[str]:
    """The start step as nodeprov sends it, in a new network namespace or that of ``netns``;
    ``changed``: launcher.Start's fields other than the defaults here (quiet=30, ...)."""
    asked = Start(str(state), run_id, "TOKEN", 0, 0, str(state.parent), "", 0,
                  list(command))._replace(**changed)
    space = (["nsenter", f"--net=/proc/{netns}/ns/net", "--"] if netns else
             ["unshare", "--net", "--", "sh", "-c", 'ip link set lo up && exec "$@"', "netns"])
    return [*space, *launcher("start", *(str(each) for each in asked[:-1]), "--",
                              *asked.command)]


def holder_in(netns: int) -> str:
    """What lockholder.py says in the network namespace of process ``netns``, as root."""
    return subprocess.run(["nsenter", f"--net=/proc/{netns}/ns/net", "--", sys.executable,
                           "-I", "-c", LOCKHOLDER], capture_output=True, text=True, timeout=30,
                          check=True).stdout.rstrip("\n")


def step(name: str, state: Path, run_id: str, *rest: str) -> dict[str, object]:
    done = subprocess.run(launcher(name, str(state), run_id, *rest), capture_output=True,
                          text=True, timeout=60, check=True)
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def marked(run_id: str) -> list[int]:
    """The run's processes, found as the stop step finds them."""
    found = []
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if f"NODEPROV_JOB_RUN={run_id}".encode() in environ.read_bytes().split(b"\0"):
                found.append(int(environ.parent.name))
        except OSError:
            continue
    return found


def within(seconds: float, done: Callable[[], bool]) -> bool:
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        if done():
            return True
        time.sleep(0.05)
    return done()


@pytest.fixture
def state(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "state"
    for run in ("run-a", "run-b", "run-c"):  # never leave a test's sleeper behind
        for pid in marked(run + str(tmp_path)[-12:]):
            os.kill(pid, signal.SIGKILL)


def run_id(tmp_path: Path, name: str = "run-a") -> str:
    return name + str(tmp_path)[-12:]  # unique across concurrent test runs


@contextmanager
def started(argv: Sequence[str]) -> Iterator[subprocess.Popen[str]]:
    """The launcher, stdin ours, once it said its token and the job said ``up``."""
    with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as child:
        assert child.stderr is not None and child.stdout is not None
        try:
            assert child.stderr.readline() == "TOKEN\n"
            assert child.stdout.readline() == "up\n", child.stderr.read()
            yield child
        finally:
            if child.poll() is None:
                child.kill()


def test_the_end_of_nodeprovs_connection_stops_the_job_and_the_next_run_hears_why(
        state: Path, tmp_path: Path) -> None:
    run = run_id(tmp_path)
    assert step("prepare", state, run) == {"run_dir": f"{state}/{run}", "note": None}
    assert (state / run).stat().st_mode & 0o777 == 0o700
    with started(start_argv(state, run, "sh", "-c", JOB, quiet=30)) as child:
        assert len(marked(run)) == 1
        assert child.stdin is not None
        child.stdin.close()  # what sshd does when nodeprov is killed: the channel's EOF
        assert child.wait(timeout=10) == 143
        assert marked(run) == [] and not (state / run).exists()
        note = step("prepare", state, run_id(tmp_path, "run-b"))["note"]
        assert isinstance(note, dict) and note["run"] == run
        assert note["why"] == ("nodeprov's connection closed (it was killed, or its machine went "
                               "away)")
        assert step("prepare", state, run_id(tmp_path, "run-c"))["note"] is None  # told once


def test_heartbeats_keep_the_job_and_their_silence_stops_it(state: Path, tmp_path: Path) -> None:
    run = run_id(tmp_path)
    step("prepare", state, run)
    with started(start_argv(state, run, "sh", "-c", JOB, quiet=1)) as child:
        assert child.stdin is not None
        for _ in range(8):  # 2.4 s of heartbeats, past QUIET
            child.stdin.write(".")
            child.stdin.flush()
            time.sleep(0.3)
        assert child.poll() is None and marked(run)
        silent = time.monotonic()  # stdin stays open, nothing comes (a cut network)
        assert child.wait(timeout=10) == 143
        assert time.monotonic() - silent < 4
        note = step("prepare", state, run_id(tmp_path, "run-b"))["note"]
        assert isinstance(note, dict)
        assert note["why"].startswith("nodeprov sent no heartbeat for 1 s")


def test_one_job_per_node_and_the_second_is_told_whose_it_is(state: Path,
                                                             tmp_path: Path) -> None:
    first, second = run_id(tmp_path), run_id(tmp_path, "run-b")
    step("prepare", state, first)
    step("prepare", state, second)
    with started(start_argv(state, first, "sh", "-c", JOB, quiet=30)) as child:
        busy = subprocess.run(start_argv(state, second, "touch", str(tmp_path / "ran"),
                                         netns=child.pid), capture_output=True, text=True,
                              timeout=30, check=False)
        assert busy.returncode == 75 and not (tmp_path / "ran").exists()
        assert busy.stderr.splitlines()[-1] == "another nodeprov job is running on this node"
        said = holder_in(child.pid)  # the kernel's words, then the holder's claim
        assert said.startswith(f"pid {child.pid} of root (uid 0): "), said
        assert " start " in said and f" {first} TOKEN " in said, said
        assert f'; it says: "run {first} of root since ' in said, said
        assert said.endswith('; its nodeprov was last heard 0 s ago"'), said
        # another network namespace is another node: its own rendezvous port, its own lock
        assert subprocess.run(start_argv(state, second, "true"), timeout=30).returncode == 0
        assert child.stdin is not None
        child.stdin.close()
        assert child.wait(timeout=10) == 143
        third = run_id(tmp_path, "run-c")
        step("prepare", state, third)  # the lock is free again
        assert subprocess.run(start_argv(state, third, "true"), timeout=30).returncode == 0


def test_the_lock_stays_held_until_the_jobs_last_process_is_gone(state: Path,
                                                                 tmp_path: Path) -> None:
    first, second = run_id(tmp_path), run_id(tmp_path, "run-b")
    step("prepare", state, first)
    step("prepare", state, second)
    with subprocess.Popen(["unshare", "--net", "--", "sleep", "600"]) as node:  # one node
        try:
            # until unshare has made it, /proc/PID/ns/net is this machine's own namespace
            assert within(10, lambda: os.readlink(f"/proc/{node.pid}/ns/net")
                          != os.readlink("/proc/self/ns/net"))
            # the job's command ends at once; a process it started in a session of its own
            # lives on, and holds the lock after the launcher is gone
            job = subprocess.run(start_argv(state, first, "sh", "-c", "setsid sleep 300 &",
                                            netns=node.pid), timeout=30, check=False)
            assert job.returncode == 0 and marked(first)
            busy = subprocess.run(start_argv(state, second, "true", netns=node.pid),
                                  capture_output=True, text=True, timeout=30, check=False)
            assert busy.returncode == 75
            assert busy.stderr.splitlines()[-1] == (
                "another nodeprov job is running on this node")
            said = holder_in(node.pid)
            assert said.startswith("pid ") and said.endswith(
                " of root (uid 0): sleep 300; it does not answer: a job whose launcher ended, "
                "or not a nodeprov launcher"), said
            assert step("stop", state, first, "")["ranks"] == {}  # nodeprov's stop step
            assert marked(first) == []
            assert subprocess.run(start_argv(state, second, "true", netns=node.pid),
                                  timeout=30).returncode == 0
        finally:
            node.kill()


def test_the_environment_file_is_read_removed_and_kept_off_command_lines(
        state: Path, tmp_path: Path) -> None:
    run = run_id(tmp_path)
    step("prepare", state, run)
    private = tmp_path / "env"
    private.write_text(json.dumps({"WANDB_API_KEY": "s3cret-7f3a"}))
    private.chmod(0o600)
    done = subprocess.run(start_argv(state, run, "sh", "-c", 'echo "$WANDB_API_KEY"; '
                                     'tr "\\0" " " < /proc/$$/cmdline', env_file=str(private)),
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0 and not private.exists()
    value, cmdline = done.stdout.splitlines()
    assert value == "s3cret-7f3a" and "s3cret" not in cmdline
    shared = tmp_path / "shared-env"
    shared.write_text("{}")
    shared.chmod(0o644)  # readable by others: refused, and removed all the same
    refused = subprocess.run(start_argv(state, run, "true", env_file=str(shared)),
                             capture_output=True, text=True, timeout=30, check=False)
    assert refused.returncode == 1 and "not a private file of this user" in refused.stderr
    assert not shared.exists()


def test_the_deadline_stops_a_hung_job_and_a_stopped_run_never_starts(
        state: Path, tmp_path: Path) -> None:
    run = run_id(tmp_path)
    step("prepare", state, run)
    began = time.monotonic()
    hung = subprocess.run(start_argv(state, run, "sleep", "30", deadline=1), timeout=30,
                          check=False)
    assert hung.returncode == 124 and time.monotonic() - began < 5
    shutil.rmtree(state / run)  # what the stop step leaves: a late start must not start
    late = subprocess.run(start_argv(state, run, "touch", str(tmp_path / "ran")), timeout=30,
                          check=False)
    assert late.returncode == 125 and not (tmp_path / "ran").exists()


def test_a_missing_chdir_folder_is_named_not_the_command(state: Path, tmp_path: Path) -> None:
    # the issue: `nodeprov run INV --chdir /nonexistent -- train.py` said "venv: torch is
    # missing from the node's venv", from the launcher's "torchrun: No such file or directory"
    run = run_id(tmp_path)
    step("prepare", state, run)
    missing = tmp_path / "nonexistent"
    done = subprocess.run(start_argv(state, run, str(TORCHRUN), "train.py",
                                     workdir=str(missing)),
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 127
    assert done.stderr.splitlines()[-1] == f"--chdir {missing}: No such file or directory"
    found = diagnose(done.stderr, "node1")
    assert found is not None and (found.item, found.cause) == (
        "job", "the folder --chdir names is not on the node")


def test_the_stop_step_stops_processes_in_their_own_sessions_and_tidies_up(
        state: Path, tmp_path: Path) -> None:
    run = run_id(tmp_path)
    step("prepare", state, run)
    # like torchrun: a worker in a session of its own, which the group kill alone misses
    with started(start_argv(state, run, "sh", "-c", "setsid sleep 300 & " + JOB)) as child:
        assert within(10, lambda: len(marked(run)) >= 2)
        (state / run / "result.json").write_text('{"ok": true}\n')
        leftover = tmp_path / "env-never-read"
        leftover.write_text("{}")
        stopped = step("stop", state, run, str(leftover))
        assert stopped == {"result": '{"ok": true}\n', "ranks": {}}
        assert child.wait(timeout=10) == 143 and marked(run) == []
        assert not (state / run).exists() and not leftover.exists()


@pytest.mark.skipif(not TORCHRUN.exists(), reason="needs torch in this venv (setup.sh)")
def test_each_rank_records_its_own_exit_code_through_torchrun(state: Path,
                                                              tmp_path: Path) -> None:
    run = run_id(tmp_path)
    step("prepare", state, run)
    script = tmp_path / "ranks.py"
    # rank 1 fails a second after rank 0 ended well (sooner, torchrun could stop rank 0 first)
    script.write_text("import os, sys, time\nprint('rank', os.environ['RANK'], 'of', sys.argv[1])\n"
                      "if os.environ['RANK'] == '1':\n    time.sleep(1)\n    sys.exit(3)\n")
    command = [str(TORCHRUN), "--nnodes", "1", "--nproc-per-node", "2", "--max-restarts", "0",
               "--tee", "3", str(script), "--flag"]
    done = subprocess.run(start_argv(state, run, *command, script_at=len(command) - 2),
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 1, done.stderr  # torchrun's own: a rank failed
    assert sorted(line.split(":", 1)[1] for line in done.stdout.splitlines()
                  if line.startswith("[")) == ["rank 0 of --flag", "rank 1 of --flag"]
    ranks = step("stop", state, run, "")["ranks"]
    assert isinstance(ranks, dict)
    assert {rank: record["exit_code"] for rank, record in ranks.items()} == {"0": 0, "1": 3}
    assert all(record["ended"] >= record["started"] for record in ranks.values())
