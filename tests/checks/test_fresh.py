"""verify's reads keep to --forks: the fresh-session read (one command per node on its open
session) and the checks' own."""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from nodeprov.checks.cluster import Cluster, Opened
from nodeprov.checks.fresh import Fresh, read_all_fresh, read_fresh, setting_lines
from nodeprov.remote.session import Session
from nodeprov.tasks.textfiles.envfile import session_settings
from tests.checks.drift.printed import printed_commands
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
                       "'/^export NCCL_SOCKET_IFNAME=lo$/s/^/: # /' ~/.profile")
    commands = [command for line in said for command in printed_commands(line)]
    assert len(commands) == 4, said
    for command in commands:
        subprocess.run(["sh", "-c", command], env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
                       check=True)
    assert session_settings((tmp_path / ".pam_environment").read_text()) == [
        item for item in session_settings(TURNED_ON) if item[1] not in ("LESS", "PAGER")]
    assert (tmp_path / ".ssh" / "environment").read_text() == "# export LESS=-R\n"
    assert (tmp_path / ".profile").read_text().endswith("\n: # export NCCL_SOCKET_IFNAME=lo\n")
    assert setting_lines(Fresh({}), ["LESS"]).startswith("none of ~/.pam_environment, ")


@pytest.mark.parametrize(("shell", "first"), [
    ("/bin/bash", "~/.bash_profile"), ("/bin/bash", "~/.bash_login"), ("/bin/bash", None),
    ("/bin/dash", "~/.bash_profile")])
def test_a_login_file_is_named_only_where_that_login_shell_reads_it(
        tmp_path: Path, shell: str, first: str | None) -> None:
    """The shell itself is the oracle: bash -l reads the first of ~/.bash_profile,
    ~/.bash_login, ~/.profile that is there (an empty one too), dash ~/.profile."""
    files = {"~/.profile": "export NCCL_SOCKET_IFNAME=lo\n", **({first: ""} if first else {})}
    for path, text in files.items():
        (tmp_path / path.removeprefix("~/")).write_text(text)
    ran = subprocess.run([shell, "-lc", 'echo "${NCCL_SOCKET_IFNAME-unset}"'],
                         env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, check=True).stdout
    said = setting_lines(Fresh({"SHELL": shell}, files=files), ["NCCL_SOCKET_IFNAME"],
                         login=True)
    assert ("~/.profile:1 " in said) == (ran == "lo\n"), (ran, said)


def test_a_login_files_line_only_running_it_can_tell_is_left_to_edit_by_hand() -> None:
    said = setting_lines(Fresh({}, files={"~/.profile": 'export NCCL_IB_HCA="mlx5_0,\nmlx5_1"\n'}),
                         ["NCCL_IB_HCA"], login=True)
    assert said == ("~/.profile:1 'export NCCL_IB_HCA=\"mlx5_0,' sets NCCL_IB_HCA for a login "
                    "shell too: edit it by hand (only running it tells what it sets)")


def test_the_read_tells_an_empty_login_file_from_none(tmp_path: Path) -> None:
    """The node-side script, run here: an empty ~/.bash_profile is there (bash then reads no
    ~/.profile), a missing ~/.bash_login is not."""
    (tmp_path / ".bash_profile").write_text("")
    (tmp_path / ".profile").write_text("A=1\n")
    home = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    here = SimpleNamespace(run=lambda argv, **_: subprocess.run(
        argv, env=home, capture_output=True, text=True, check=True))
    seen = read_fresh(cast(Session, here), "10.0.0.0/24")
    assert isinstance(seen, Fresh), seen
    files = seen.files
    assert (files["~/.bash_profile"], files["~/.profile"]) == ("", "A=1\n")
    assert "~/.bash_login" not in files and "~/.pam_environment" not in files
