"""`up` and `down`: what they make, that `down` removes exactly that, and failure handling."""

import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nodeprov.errors import InputError, NodeprovError
from nodeprov.testbed import lifecycle, probe
from nodeprov.testbed.cluster import Testbed
from nodeprov.testbed.lifecycle import down, up
from nodeprov.testbed.naming import Names
from nodeprov.testbed.processes import ProcessId
from nodeprov.testbed.state import State

pytestmark = pytest.mark.integration

MakeTestbed = Callable[..., Testbed]


def machine(*argv: str) -> list[str]:
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout.splitlines()


def snapshot() -> dict[str, list[str]]:
    """What the machine shows in `ip netns`, `ip link`, mounts and routes."""
    return {"netns": machine("ip", "netns", "list"), "links": machine("ip", "-o", "link"),
            "mounts": Path("/proc/self/mountinfo").read_text().splitlines(),
            "routes": machine("ip", "route", "show", "table", "all")}


def mentioning(directory: Path, view: dict[str, list[str]]) -> dict[str, list[str]]:
    """The entries naming this directory's testbed (other testbeds may be up meanwhile)."""
    needles = (Names.for_dir(directory).prefix, str(directory))
    return {kind: [entry for entry in entries if any(needle in entry for needle in needles)]
            for kind, entries in view.items()}


def processes(directory: Path) -> list[ProcessId]:
    state = State.load(directory / "state.json")
    return [process for node in state.nodes for process in (node.init, node.launcher)
            if process]


@pytest.fixture
def directory() -> Iterator[Path]:
    """An empty directory under /srv; any testbed left in it is taken down afterwards."""
    made = Path(tempfile.mkdtemp(prefix="nodeprov-testbed-", dir="/srv"))
    yield made
    down(made)
    made.rmdir()


def test_down_removes_everything_up_made_and_is_idempotent(directory: Path) -> None:
    ip_forward = Path("/proc/sys/net/ipv4/ip_forward").read_text()
    testbed = up(directory, nodes=2, outsider=True)
    # Nothing is routed through the machine, so forwarding stays off, even on the bridge.
    assert Path("/proc/sys/net/ipv4/ip_forward").read_text() == ip_forward
    assert Path(f"/proc/sys/net/ipv4/conf/{testbed.state.bridge}/forwarding").read_text() == "0\n"
    made = mentioning(directory, snapshot())
    assert len(made["netns"]) == 3 and len(made["links"]) == 4  # 3 veths and the bridge
    assert len(made["mounts"]) == 3  # each /run/netns/NAME; the overlays live in the nodes
    bridge = testbed.state.bridge
    assert f"{testbed.subnet} dev {bridge} proto kernel scope link src " \
           f"{testbed.state.bridge_address.split('/')[0]} " in made["routes"]
    started = processes(directory)
    assert len(started) == 4 and all(process.alive() for process in started)

    assert down(directory) is True
    assert mentioning(directory, snapshot()) == {"netns": [], "links": [], "mounts": [],
                                                 "routes": []}
    assert not any(process.alive() for process in started)
    assert list(directory.iterdir()) == []  # it existed before `up`, so it stays
    assert down(directory) is False


def test_up_cleans_up_after_itself_when_it_fails(directory: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[ProcessId] = []

    def no_sshd_answers(addresses: list[str], timeout: float) -> None:
        started.extend(processes(directory))
        raise NodeprovError("testbed: no sshd answered")

    monkeypatch.setattr(probe, "await_banners", no_sshd_answers)
    with pytest.raises(NodeprovError, match="no sshd answered"):
        up(directory, nodes=2, outsider=True)
    assert len(started) == 4 and not any(process.alive() for process in started)
    assert mentioning(directory, snapshot()) == {"netns": [], "links": [], "mounts": [],
                                                 "routes": []}
    assert list(directory.iterdir()) == []


def test_an_interrupted_up_cleans_up_and_lets_the_interrupt_through(
        directory: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(probe, "login_failures", interrupted)
    with pytest.raises(KeyboardInterrupt):
        up(directory, nodes=2)
    assert mentioning(directory, snapshot())["netns"] == []
    assert list(directory.iterdir()) == []


def test_down_finishes_a_half_made_testbed(directory: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # As if `up` had been killed before it could clean up: nodes run, no ssh files yet.
    monkeypatch.setattr(lifecycle, "_teardown", lambda state, layout: None)
    monkeypatch.setattr(probe, "await_banners", lambda *args: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        up(directory, nodes=2, outsider=True)
    monkeypatch.undo()
    started = processes(directory)
    assert len(mentioning(directory, snapshot())["netns"]) == 3 and len(started) == 4

    assert down(directory) is True
    assert mentioning(directory, snapshot())["netns"] == []
    assert not any(process.alive() for process in started)
    assert list(directory.iterdir()) == []


def test_up_refuses_a_directory_holding_a_testbed(directory: Path) -> None:
    up(directory, nodes=1)
    with pytest.raises(InputError, match="state.json exists: run `nodeprov testbed down"):
        up(directory, nodes=1)
    assert Testbed.load(directory).ssh("node1", "true").returncode == 0  # untouched


def test_two_testbeds_at_once_do_not_collide(make_testbed: MakeTestbed) -> None:
    first, second = make_testbed(nodes=2), make_testbed(nodes=2)
    assert first.subnet != second.subnet
    assert first.state.bridge != second.state.bridge
    assert first.dir != second.dir
    first.exec("node1", "sh", "-c", "echo first > /etc/nodeprov-testbed-mark", check=True)
    assert first.ssh("node1", "cat", "/etc/nodeprov-testbed-mark").stdout == "first\n"
    assert second.ssh("node1", "cat", "/etc/nodeprov-testbed-mark").returncode == 1
    assert first.layout.known_hosts.read_text() != second.layout.known_hosts.read_text()


@pytest.mark.parametrize("count", [16, 32])
def test_many_nodes_come_up_and_go_down_in_seconds(directory: Path, count: int,
                                                   record_property: Callable[..., None]) -> None:
    started = time.monotonic()
    testbed = up(directory, nodes=count)
    up_seconds = time.monotonic() - started
    rows = testbed.status()
    assert [row.name for row in rows] == [f"node{index}" for index in range(1, count + 1)]
    assert all(row.running and row.sshd for row in rows)
    started = time.monotonic()
    assert down(directory)
    down_seconds = time.monotonic() - started
    record_property("up_seconds", round(up_seconds, 2))
    record_property("down_seconds", round(down_seconds, 2))
    print(f"{count} nodes: up {up_seconds:.1f} s, down {down_seconds:.1f} s")
    assert up_seconds < 4 * count and down_seconds < count  # generous: CI machines are slow


def test_a_bind_mounted_hosts_file_on_the_machine_still_gives_nodes_their_own(
        directory: Path) -> None:
    # Containers bind-mount /etc/hosts. Simulate that in a mount namespace that only receives
    # mounts from the machine (slave), so the bind never reaches the machine itself.
    machine_hosts = Path("/etc/hosts").read_text()
    bound = directory.parent / f"{directory.name}.hosts"
    bound.write_text("# bind-mounted over /etc/hosts\n")
    try:
        subprocess.run(
            ["unshare", "--mount", "--propagation", "slave", "--", "sh", "-c",
             'mount --bind "$1" /etc/hosts && grep -q bind-mounted /etc/hosts && '
             '"$2" -m nodeprov testbed up --nodes 1 --dir "$3"',
             "-", str(bound), sys.executable, str(directory)],
            check=True, capture_output=True, text=True)
    finally:
        bound.unlink()
    testbed = Testbed.load(directory)
    assert "127.0.1.1\tnode1" in testbed.ssh("node1", "cat", "/etc/hosts").stdout
    assert testbed.exec("node1", "findmnt", "/etc/hosts").returncode == 1  # a plain file
    renamed = testbed.ssh("node1", "sh", "-c",
                          "echo '10.0.0.9 renamed' > /etc/hosts.new && "
                          "mv /etc/hosts.new /etc/hosts && cat /etc/hosts")
    assert renamed.stdout == "10.0.0.9 renamed\n", renamed.stderr
    assert Path("/etc/hosts").read_text() == machine_hosts
