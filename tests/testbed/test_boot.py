import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import pytest

from nodeprov.errors import NodeprovError
from nodeprov.testbed import boot
from nodeprov.testbed.nodeinit import parent_pid
from nodeprov.testbed.state import Member


def test_prepare_seeds_the_upper_layers(tmp_path: Path) -> None:
    (tmp_path / "host_key").write_text("PRIVATE KEY\n")
    boot.prepare(tmp_path, "node2", "10.77.3.3", "ssh-ed25519 AAAA testbed\n",
                 tmp_path / "host_key", {"MaxStartups": "2:100:2"})
    hosts = (tmp_path / "upper/etc/hosts").read_text()
    assert "127.0.1.1\tnode2\n" in hosts and hosts.startswith("127.0.0.1\tlocalhost\n")
    assert "10.77.3.3" not in hosts  # nodeprov, not the testbed, lists the nodes
    assert (tmp_path / "upper/etc/hostname").read_text() == "node2\n"
    assert "nameserver 127.0.0.1" in (tmp_path / "upper/etc/resolv.conf").read_text()
    root = tmp_path / "upper/root"
    assert root.stat().st_mode & 0o777 == 0o700
    assert (root / ".ssh/authorized_keys").stat().st_mode & 0o777 == 0o600
    sshd = tmp_path / "upper/etc/ssh/nodeprov-testbed"  # the node sees no testbed directory
    config = (sshd / "sshd_config").read_text()
    assert "ListenAddress 10.77.3.3:22\n" in config and "\nMaxStartups 2:100:2\n" in config
    assert "HostKey /etc/ssh/nodeprov-testbed/host_key\n" in config
    assert (sshd / "host_key").read_text() == "PRIVATE KEY\n"
    assert (sshd / "host_key").stat().st_mode & 0o777 == 0o600
    assert sorted(path.name for path in (tmp_path / "private").iterdir()) == [
        "home", "media", "mnt", "opt", "srv"]
    assert {path.name for path in (tmp_path / "work").iterdir()} == {
        tree.strip("/") for tree in boot.system_trees()[1]}  # one per overlay


def test_init_plan_shows_the_system_trees_and_shares_nothing_else_writable(
        tmp_path: Path) -> None:
    plan = boot.init_plan(tmp_path, "node1", "/usr/sbin/sshd", ["/opt/wheels"])
    lower = {layer["target"]: layer["lower"] for layer in plan["overlays"]}
    assert {"/etc": "/etc", "/var": "/var", "/usr": "/usr", "/root": "/etc/skel"}.items() <= (
        lower.items())
    assert set(lower) - {"/etc", "/var", "/usr", "/root"} <= set(boot.SYSTEM_LINKS)
    assert set(plan["links"]) | set(lower) >= {"/bin", "/lib"}  # a link or an overlay each
    assert all(layer["upper"].startswith(str(tmp_path)) for layer in plan["overlays"])
    assert plan["private"] == {tree: str(tmp_path / "private" / tree[1:])
                               for tree in ("/opt", "/home", "/srv", "/mnt", "/media")}
    assert plan["shared"] == ["/opt/wheels"] and plan["root"] == str(tmp_path / "root")
    assert plan["sshd"] == ["/usr/sbin/sshd", "-D", "-e", "-f",
                            "/etc/ssh/nodeprov-testbed/sshd_config"]


READY = ("import os, time; print(os.getpid(), os.getppid()); print('ready', flush=True); "
         "time.sleep(30)")
EXITS = "import os; print(os.getpid(), os.getppid())"


@pytest.fixture
def fake_init() -> Iterator[Callable[[str], IO[bytes]]]:
    """Stand-in node inits running ``script``, reporting through real pipes; killed after."""
    started: list[subprocess.Popen[bytes]] = []

    def start(script: str) -> IO[bytes]:
        started.append(subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE))
        assert started[-1].stdout is not None
        return started[-1].stdout

    yield start
    for process in started:
        process.kill()
        process.wait()


def test_await_started_records_pids_and_waits_for_ready(
        tmp_path: Path, fake_init: Callable[[str], IO[bytes]]) -> None:
    member = Member("node1", "10.77.3.2/24", "ns", "veth")
    pipe = fake_init(READY)
    boot.await_started({"node1": pipe}, {"node1": member}, lambda name: tmp_path / name, 5)
    assert member.init is not None and member.init.alive()
    assert member.launcher is not None and member.launcher.pid == os.getpid()
    assert pipe.closed


def test_await_started_names_the_failed_node_with_its_log_and_still_records_others(
        tmp_path: Path, fake_init: Callable[[str], IO[bytes]]) -> None:
    (tmp_path / "node2").write_text("OSError: mount overlay on /etc: Invalid argument\n")
    members = {name: Member(name, "10.0.0.2/24", "ns", "veth") for name in ("node1", "node2")}
    pipes = {"node1": fake_init(READY), "node2": fake_init(EXITS)}
    with pytest.raises(NodeprovError, match="node2: testbed: node init exited: OSError: mount "
                                            "overlay on /etc"):
        boot.await_started(pipes, members, lambda name: tmp_path / name, 5)
    assert members["node1"].init is not None and members["node1"].init.alive()
    assert members["node2"].launcher is not None


def test_await_started_times_out(tmp_path: Path) -> None:
    member = Member("node1", "10.77.3.2/24", "ns", "veth")
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"],
                               stdout=subprocess.PIPE)
    assert process.stdout is not None
    try:
        with pytest.raises(NodeprovError, match="not ready after 0 s"):
            boot.await_started({"node1": process.stdout}, {"node1": member},
                                lambda name: tmp_path / name, 0.2)
    finally:
        process.kill()
        process.wait()


def test_parent_pid_reads_proc_status() -> None:
    assert parent_pid("Name:\tsshd\nPid:\t14038\nPPid:\t14033\n") == "14033"
