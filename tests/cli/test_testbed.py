"""`nodeprov testbed up|status|exec|down` as a person runs them."""

import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nodeprov.cli import app
from nodeprov.inventory import load_inventory
from nodeprov.testbed.cluster import Testbed
from nodeprov.testbed.lifecycle import down

pytestmark = pytest.mark.integration


@pytest.fixture
def directory() -> Iterator[Path]:
    made = Path(tempfile.mkdtemp(prefix="nodeprov-testbed-", dir="/srv"))
    yield made
    down(made)
    made.rmdir()


def run_cli(*argv: str) -> subprocess.CompletedProcess[str]:
    """The real command line in a child process, so a node's output reaches our pipe."""
    return subprocess.run([sys.executable, "-m", "nodeprov", "testbed", *argv],
                          capture_output=True, text=True, timeout=60)


def test_up_status_exec_down(directory: Path) -> None:
    runner = CliRunner()
    dir_option = ["--dir", str(directory)]
    result = runner.invoke(app, ["testbed", "up", "--nodes", "2", "--outsider", *dir_option,
                                 "--var", "pip_find_links=[/opt/wheels]",
                                 "--var", "rdzv_port=29500"])
    assert result.exit_code == 0, result.output
    assert "2 nodes up in" in result.stdout
    assert f"ssh -F {directory}/ssh_config node1" in result.stdout

    inventory = load_inventory(directory / "inventory.yaml")
    assert [host.name for host in inventory.hosts] == ["node1", "node2"]
    assert list(inventory.hosts[1].vars["pip_find_links"]) == ["/opt/wheels"]
    assert inventory.hosts[1].vars["rdzv_port"] == 29500
    login = subprocess.run(["ssh", "-F", str(directory / "ssh_config"), "node2", "hostname"],
                           capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert login.stdout == "node2\n", login.stderr

    status = runner.invoke(app, ["testbed", "status", *dir_option])
    assert status.exit_code == 0, status.output
    assert [line.split()[0] for line in status.stdout.splitlines()] == [
        "node1", "node2", "outsider"]
    assert status.stdout.count("sshd ok") == 2

    ran = run_cli("exec", *dir_option, "node2", "--", "sh", "-c", "hostname; exit 3")
    assert (ran.returncode, ran.stdout) == (3, "node2\n")
    assert runner.invoke(app, ["testbed", "exec", *dir_option, "node1", "--",
                               "sh", "-c", "exit 5"]).exit_code == 5
    outsider = run_cli("exec", *dir_option, "outsider", "--", "ip", "-4", "-o", "addr")
    assert Testbed.load(directory).address("outsider") in outsider.stdout
    unknown = run_cli("exec", *dir_option, "node9", "--", "true")
    assert unknown.returncode == 2 and "no node 'node9'" in unknown.stderr

    result = runner.invoke(app, ["testbed", "down", *dir_option])
    assert (result.exit_code, result.stdout) == (0, f"removed the testbed in {directory}\n")
    result = runner.invoke(app, ["testbed", "down", *dir_option])
    assert (result.exit_code, result.stdout) == (0, f"no testbed in {directory}\n")
    assert list(directory.iterdir()) == []


def test_status_and_exec_notice_a_dead_node(directory: Path) -> None:
    run_cli("up", "--nodes", "2", "--dir", str(directory)).check_returncode()
    node2 = Testbed.load(directory).state.member("node2")
    assert node2.init is not None
    os.kill(node2.init.pid, 9)
    status = CliRunner().invoke(app, ["testbed", "status", "--dir", str(directory)])
    assert status.exit_code == 1
    assert "GONE" in status.stdout.splitlines()[1] and "sshd ok" in status.stdout.splitlines()[0]
    ran = run_cli("exec", "--dir", str(directory), "node2", "--", "true")
    assert ran.returncode == 1 and "node2: testbed: the node is not running" in ran.stderr


def test_up_refuses_a_directory_inside_a_node_private_tree() -> None:
    result = CliRunner().invoke(app, ["testbed", "up", "--dir", "/var/lib/nodeprov-testbed"])
    assert result.exit_code == 2
    assert "/var/lib/nodeprov-testbed is inside /var" in result.stderr
    assert not Path("/var/lib/nodeprov-testbed").exists()


def test_status_without_a_testbed_says_how_to_make_one(directory: Path) -> None:
    result = CliRunner().invoke(app, ["testbed", "status", "--dir", str(directory)])
    assert result.exit_code == 2
    assert f"nodeprov testbed up --dir {directory}" in result.stderr


@pytest.fixture
def victims(tmp_path: Path) -> Iterator[tuple[str, str, subprocess.Popen[bytes]]]:
    """A link, a network namespace and a process that are none of any testbed's."""
    tag = tmp_path.name[-6:].replace("_", "")
    link, netns = f"npv{tag}a", f"nodeprov-victim-{tag}"
    subprocess.run(["ip", "link", "add", link, "type", "veth", "peer", "name", f"npv{tag}b"],
                   check=True)
    subprocess.run(["ip", "netns", "add", netns], check=True)
    process = subprocess.Popen(["sleep", "300"])
    try:
        yield link, netns, process
    finally:
        process.kill()
        process.wait()
        subprocess.run(["ip", "link", "del", link], capture_output=True, check=False)
        subprocess.run(["ip", "netns", "del", netns], capture_output=True, check=False)


def test_a_forged_state_file_removes_and_kills_nothing_of_anyone_elses(
        directory: Path, victims: tuple[str, str, subprocess.Popen[bytes]]) -> None:
    """Issue #23 point 9: `testbed down` deleted the link and namespace and killed the process
    a forged DIR/state.json named."""
    from nodeprov.testbed.naming import Names
    from nodeprov.testbed.processes import ProcessId
    from nodeprov.testbed.state import Member, State

    link, netns, process = victims
    names = Names.for_dir(directory)
    target = ProcessId.of(process.pid)
    own = State(dir=str(directory), created_dir=False, subnet="10.250.0.0/24",
                bridge=names.bridge, bridge_address="10.250.0.1/24",
                nodes=[Member("node1", "10.250.0.2/24", names.netns("node1"),
                              names.veth("node1"), init=target)])
    for state, code in ((State(**{**own.__dict__, "bridge": link}), 2),
                        (State(**{**own.__dict__, "nodes": [Member(
                            "node1", "10.250.0.2/24", netns, names.veth("node1"))]}), 2),
                        (own, 0)):  # its own names, but the process carries no marker
        state.save(directory / "state.json")
        done = run_cli("down", "--dir", str(directory))
        assert done.returncode == code, done.stderr
        assert code == 0 or "none of this testbed's" in done.stderr
        assert subprocess.run(["ip", "link", "show", link], capture_output=True).returncode == 0
        assert netns in subprocess.run(["ip", "netns", "list"], capture_output=True,
                                       text=True).stdout
        assert process.poll() is None


def test_status_as_a_user_says_root_is_needed(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path: Path) -> None:
    """Before, a user's status listed every running node as GONE (its PID 1's environment is
    root's to read) and exited 1."""
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    result = CliRunner().invoke(app, ["testbed", "status", "--dir", str(tmp_path)])
    assert result.exit_code == 2 and "testbed: root is needed" in result.stderr, result.output
