"""The run lock's holder script, run by a local sh with its lock files under tmp_path: held
until EOF or a silence, busy naming its holder, waiting for a running batch."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from nodeprov.nodelock import LOCK_PATH, RUN_LOCK, holder_argv

READ = "printf '\\n@@%s end\\n' \"$1\"\n"  # stands in for the facts


def holder(tmp_path: Path, wait: float = 0, quiet: float = 30) -> subprocess.Popen[str]:
    """The holder as it runs on a node, stdin open (the channel); paths moved under tmp."""
    argv = [arg.replace(RUN_LOCK, str(tmp_path / "run" / "lock"))
            .replace(LOCK_PATH, str(tmp_path / "state" / "lock"))
            for arg in holder_argv(READ, "T", wait, quiet)]
    return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)


def free(lock: Path) -> bool:
    return subprocess.run(["flock", "-n", str(lock), "true"], check=False).returncode == 0


def test_held_until_the_channel_closes(tmp_path: Path) -> None:
    with holder(tmp_path) as process:
        assert process.stdout is not None and process.stdin is not None
        assert [process.stdout.readline() for _ in range(4)] == ["started\n", "held\n", "\n",
                                                                  "@@T end\n"]
        process.stdin.write(".")  # a heartbeat
        process.stdin.flush()
        time.sleep(0.3)
        assert process.poll() is None and not free(tmp_path / "run" / "lock")
        assert (tmp_path / "run" / "lock").read_text().startswith("pid ")
        process.stdin.close()
        assert process.wait(timeout=10) == 0 and free(tmp_path / "run" / "lock")


def test_held_until_the_heartbeats_stop(tmp_path: Path) -> None:
    with holder(tmp_path, quiet=1) as process:
        assert process.wait(timeout=10) == 0  # stdin still open, no heartbeat for 1 s
        assert free(tmp_path / "run" / "lock")


def test_busy_names_the_holder_and_reads_anyway(tmp_path: Path) -> None:
    lock = tmp_path / "run" / "lock"
    lock.parent.mkdir()
    lock.write_text("pid 42 since then from 10.9.9.9\n")
    with subprocess.Popen(["flock", str(lock), "sleep", "30"]) as other:
        try:
            time.sleep(0.3)
            with holder(tmp_path) as process:
                output = process.communicate(timeout=10)[0]
        finally:
            other.kill()
    assert output == ("started\nbusy: another nodeprov run holds this node (pid 42 since then "
                      "from 10.9.9.9)\n\n@@T end\n")


def test_waits_for_a_running_batch_and_frees_the_run_lock_when_busy(tmp_path: Path) -> None:
    batches = tmp_path / "state" / "lock"
    batches.parent.mkdir()
    with subprocess.Popen(["flock", str(batches), "sleep", "1"]) as batch:
        time.sleep(0.3)
        with holder(tmp_path) as process:
            busy = process.communicate(timeout=10)[0]
        assert busy.startswith("started\nbusy: a command of an interrupted nodeprov run still")
        assert free(tmp_path / "run" / "lock")
        with holder(tmp_path, wait=10) as process:  # the batch ends within 1 s
            output = process.communicate(input="", timeout=10)[0]
        batch.wait()
    assert output == "started\nheld\n\n@@T end\n" and process.returncode == 0
    assert free(batches)
