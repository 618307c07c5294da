import os
import signal
import subprocess
import time

from nodeprov.testbed.processes import ProcessId, kill_and_wait, node_processes, parse_stat

# /proc/PID/stat of an sshd, its command name holding spaces and a ')'.
STAT = ("4242 (sshd: a) b) S 1 4242 4242 0 -1 4194560 120 0 0 0 3 1 0 0 20 0 1 0 817263 "
        "9003008 1536 18446744073709551615")


def test_parse_stat_finds_state_and_start_time_after_the_last_parenthesis() -> None:
    assert parse_stat(STAT) == ("S", 817263)


def test_a_process_is_known_by_pid_and_start_time() -> None:
    me = ProcessId.of(os.getpid())
    assert me is not None and me.alive()
    assert not ProcessId(me.pid, me.start_time + 1).alive()  # a recycled PID is not "us"


MARKER = "NODEPROV_TESTBED=nt123456"


def carries_soon(process: ProcessId, marker: str) -> bool:
    """``carries``, given a loaded machine the time to show the new process's environment."""
    until = time.monotonic() + 5
    while not process.carries(marker):
        if time.monotonic() > until:
            return False
        time.sleep(0.05)
    return True


def test_kill_and_wait_ends_the_process_and_ignores_the_gone() -> None:
    child = subprocess.Popen(["sleep", "60"], env={**os.environ, "NODEPROV_TESTBED": "nt123456"})
    try:
        process = ProcessId.of(child.pid)
        assert process is not None and carries_soon(process, MARKER)
        assert kill_and_wait([process, ProcessId(child.pid, process.start_time + 1)]) == []
        assert child.wait(timeout=5) == -9
    finally:
        child.kill()
        child.wait()
    assert not process.alive()


def test_a_node_is_a_marked_launcher_and_its_child() -> None:
    """Issue #23 point 9: a forged state.json made `testbed down` kill any process it named."""
    for marker, expected in ((MARKER, 2), ("NODEPROV_TESTBED=ntother", 0)):
        with subprocess.Popen(["sh", "-c", "sleep 60 & echo $!; wait"], text=True,
                              stdout=subprocess.PIPE, start_new_session=True,
                              env={**os.environ, "NODEPROV_TESTBED": "nt123456"}) as launcher:
            try:
                assert launcher.stdout is not None
                init = ProcessId.of(int(launcher.stdout.readline()))
                outer = ProcessId.of(launcher.pid)
                stranger = ProcessId.of(os.getpid())
                found = node_processes(init, outer, marker)
                assert len(found) == expected and (not found or found == [outer, init])
                assert node_processes(stranger, outer, MARKER) == [outer]  # not its child
                assert node_processes(init, stranger, MARKER) == []  # no marker
            finally:
                os.killpg(launcher.pid, signal.SIGKILL)
