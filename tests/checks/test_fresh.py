"""verify's reads keep to --forks: the fresh-session read (one command per node on its open
session) and the checks' own."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

from nodeprov.checks.cluster import Cluster, Opened
from nodeprov.checks.fresh import Fresh, read_all_fresh, setting_lines
from nodeprov.remote.session import Session
from nodeprov.tasks.textfiles.envfile import session_settings
from tests.tasks.kit import make_facts
from tests.tasks.textfiles.test_envfile import TURNED_ON


class FakeSession:
    """Answers the fresh read as a node would, and counts how many run at the same time."""

    running = 0
    most = 0
    lock = threading.Lock()
    names: tuple[str, ...] = ()

    def __init__(self) -> None:
        self.host = SimpleNamespace(vars={"node_subnet": "10.0.0.0/24"})

    def run(self, argv: tuple[str, ...], **_: Any) -> SimpleNamespace:
        with self.lock:
            FakeSession.running += 1
            FakeSession.most = max(FakeSession.most, FakeSession.running)
        time.sleep(0.02)
        with self.lock:
            FakeSession.running -= 1
        token = argv[4]
        FakeSession.names = argv[6:]
        return SimpleNamespace(stdout=f"NCCL_SOCKET_IFNAME=eth1\n@@{token} name node1\n"
                                      "10.0.0.2 STREAM node1\n")


def test_the_fresh_read_keeps_to_forks_and_keeps_each_nodes_failure() -> None:
    names = [f"node{i}" for i in range(8)]
    sessions = {name: cast(Session, FakeSession()) for name in names}
    gathered: dict[str, Any] = {name: make_facts(hostname=f"gpu{name[-1]}", fqdn=f"gpu{name[-1]}")
                                for name in names}
    gathered["node7"] = "node7: facts could not be read"
    seen = read_all_fresh(names, sessions, gathered, forks=2)
    assert FakeSession.most == 2
    assert seen["node7"] == "node7: facts could not be read"
    assert seen["node0"] == Fresh({"NCCL_SOCKET_IFNAME": "eth1"},
                                  resolved={"node1": ["10.0.0.2"]})
    # every inventory name, and each node's hostname (what torch advertises), to resolve
    assert FakeSession.names == (*names, *(f"gpu{i}" for i in range(7)))


def test_the_checks_keep_to_verifys_forks_too() -> None:
    # Cluster.each runs the checks' own reads (torch imports take seconds) at --forks at once
    cluster = Cluster(cast(Any, None), cast(Any, None), None, [], cast(Any, None),
                      cast(Any, None))
    cluster.adopt(Opened({}, {}, {}, {}, forks=3))
    running = most = 0
    lock = threading.Lock()

    def work(_: object) -> None:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.02)
        with lock:
            running -= 1

    cluster.each(work, cast(Any, list(range(9))))
    assert most == 3


def test_each_line_setting_a_wrong_variable_is_said_by_hand_and_its_sed_comments_it_out(
        tmp_path: Path) -> None:
    """Linux-PAM's example pam_env.conf, turned on, as the user's ~/.pam_environment (the
    commands run as printed, in a shell whose home is ``tmp_path``), and a login shell's."""
    files = {"~/.pam_environment": TURNED_ON, "~/.ssh/environment": "export LESS=-R\n",
             "~/.profile": "PATH=$HOME/bin:$PATH\nexport NCCL_SOCKET_IFNAME=lo\n"}
    for path, text in files.items():
        (tmp_path / path.removeprefix("~/")).parent.mkdir(exist_ok=True)
        (tmp_path / path.removeprefix("~/")).write_text(text)
    seen = Fresh({}, files=files)
    said = [setting_lines(seen, ["LESS", "PAGER"]),
            setting_lines(seen, ["NCCL_SOCKET_IFNAME"], login=True)]
    assert said[1] == ("~/.profile:2 'export NCCL_SOCKET_IFNAME=lo' sets NCCL_SOCKET_IFNAME for "
                       "a login shell too: comment it out: sed -i "
                       "'/^export NCCL_SOCKET_IFNAME=lo$/s/^/# /' ~/.profile")
    commands = [item.rpartition(": comment it out: ")[2] for line in said
                for item in line.split("; ")]
    assert len(commands) == 4, said
    for command in commands:
        subprocess.run(["sh", "-c", command], env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
                       check=True)
    assert session_settings((tmp_path / ".pam_environment").read_text()) == [
        item for item in session_settings(TURNED_ON) if item[1] not in ("LESS", "PAGER")]
    assert (tmp_path / ".ssh" / "environment").read_text() == "# export LESS=-R\n"
    assert (tmp_path / ".profile").read_text().endswith("\n# export NCCL_SOCKET_IFNAME=lo\n")
    assert setting_lines(Fresh({}), ["LESS"]).startswith("none of ~/.pam_environment, ")
