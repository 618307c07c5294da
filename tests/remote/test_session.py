"""Session: round trips, batching, failure attribution, sudo wrapping (fake connection)."""

from __future__ import annotations

import io
import os
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from nodeprov.errors import CommandFailed, HostError
from nodeprov.inventory import Host
from nodeprov.remote import reader
from nodeprov.remote.actions import Local, Probe, Run, Upload, Write
from nodeprov.remote.nodelock import LOCK_DIR, STATE_DIR
from nodeprov.remote.options import SshOptions
from nodeprov.remote.session import Session
from nodeprov.util.progress import Transfers


@dataclass
class Completed:
    stdout: str
    stderr: str
    exited: int


@dataclass
class LocalShell:
    """Stands in for a Fabric Connection: runs the command line with a local sh in ``root``.

    Paths in the scripts are rewritten under ``root`` so nothing outside the test dir changes.
    """

    root: str
    commands: list[str] = field(default_factory=list)
    stdins: list[str | None] = field(default_factory=list)

    def run(self, command: str, **kwargs: Any) -> Completed:
        self.commands.append(command)
        stream = kwargs.get("in_stream")
        stdin = stream.read() if stream else None
        self.stdins.append(stdin)
        argv = shlex.split(command)
        if argv[:2] == ["sudo", "-S"]:
            argv = argv[5:]  # sh -c 'print the start mark; exec "$@"' MARK argv
            stdin = stdin.split("\n", 1)[1] if stdin else stdin
        argv = [arg.replace(STATE_DIR, f"{self.root}/state").replace(LOCK_DIR, f"{self.root}/run")
                for arg in argv]
        done = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=30,
                              check=False)
        return Completed(done.stdout, done.stderr, done.returncode)

    def close(self) -> None:
        pass


def session_for(tmp_path: Any, **host_fields: Any) -> tuple[Session, LocalShell]:
    host = Host(name="node1", address="10.0.0.11", node_address="10.0.0.11", **host_fields)
    session = Session(host, SshOptions())
    shell = LocalShell(str(tmp_path))
    session._connection = shell
    return session, shell


def test_facts_and_probes_in_one_round_trip(tmp_path: Any) -> None:
    (tmp_path / "f").write_text("no trailing newline")
    session, shell = session_for(tmp_path)
    facts, observed = session.gather([Probe(("cat", str(tmp_path / "f"))), None,
                                      Probe(("printf", "a\n\nb\n"))])
    assert len(shell.commands) == 1 and session.round_trips == 1
    assert facts.ephemeral_port_range[0] > 0
    assert observed == ["no trailing newline", "", "a\n\nb\n"]


@pytest.mark.parametrize(("tool", "says", "error"), [
    ("ip", "[" * 100_000, "`ip -j addr show` printed no valid JSON (its JSON: nested more "
                          "than 64 deep)"),
    ("ip", '[{"ifname": "eth0", "mtu": ' + "9" * 400 + "}]", "`ip -j addr show` printed no "
     "valid JSON (its JSON: a number of 400 digits, more than any value nodeprov reads)"),
    ("cat", "61000 32768", "the node's ephemeral port range '61000 32768' is not valid here"),
    ("ip", '[{"ifname": "eth0", "addr_info": [{"family": "inet", "local": "10.0.0.1", '
           '"prefixlen": 33}]}]', "the node's interface 'eth0': '10.0.0.1/33' does not"),
])
def test_a_node_that_lies_about_a_fact_fails_alone_naming_it(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch, tool: str, says: str, error: str) -> None:
    # the node's own tool, earlier in PATH, prints what a broken or hostile node may print:
    # one HostError naming the node and the fact, which the runner keeps to this node (a
    # RecursionError stopped every node's run)
    fakes = tmp_path / "bin"
    fakes.mkdir()
    (fakes / tool).write_text(f"#!/bin/sh\nprintf '%s\\n' {shlex.quote(says)}\n")
    (fakes / tool).chmod(0o755)
    monkeypatch.setenv("PATH", f"{fakes}:{os.environ['PATH']}")
    session, _ = session_for(tmp_path)
    with pytest.raises(HostError, match=re.escape(f"node1: facts: cannot read the node's facts: "
                                                  f"{error}")) as raised:
        session.gather([])
    assert "\n" not in str(raised.value) and len(str(raised.value)) < 400
    assert "iproute2?" not in str(raised.value)  # the hint that every such error had


def test_a_parser_bug_met_by_a_nodes_output_fails_that_node_only(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # the runner keeps a HostError to its node; any other exception stopped every node's run
    def broken(sections: Any) -> Any:
        raise TypeError("'int' object is not iterable")
    monkeypatch.setattr("nodeprov.remote.session.parse_facts", broken)
    session, _ = session_for(tmp_path)
    with pytest.raises(HostError, match=re.escape(
            "node1: facts: cannot read the node's facts: internal error TypeError: 'int' object "
            "is not iterable (please report this)")):
        session.gather([])


def test_sh_probes_run_as_functions_in_the_facts_shell(tmp_path: Any) -> None:
    session, shell = session_for(tmp_path)
    probes = [Probe(("sh", "-c", 'printf "%s|" "$@"; exit 3', "name", "a b", "$(no)")),
              Probe(("sh", "-c", 'echo "$0"', "zero")),  # $0: its own sh
              Probe(("sh", "-c", "echo no name")),
              Probe(("sh", "-c", "# nothing", "empty"))]
    _, observed = session.gather(probes)
    assert observed == ["a b|$(no)|", "zero\n", "no name\n", ""]
    script = shlex.split(shell.commands[0])[2]
    assert "nodeprov_probe0() {" in script and "nodeprov_probe1" not in script
    assert "nodeprov_probe2" not in script and "nodeprov_probe3() {" in script


def test_a_change_and_the_probes_after_it_in_one_round_trip(tmp_path: Any) -> None:
    target = tmp_path / "motd"
    session, shell = session_for(tmp_path)
    read = session.execute("block", [Write(str(target), "new\n")],
                           then_read=[None, reader.read_many_probe(str(target))])
    assert read is not None and read[1][0] == ""
    assert reader.observed_files(read[1][1]) == {str(target): "new\n"}
    assert read[0].ephemeral_port_range[0] > 0
    assert len(shell.commands) == 1 and session.round_trips == 1


def test_actions_ending_outside_a_batch_leave_the_read_to_gather(tmp_path: Any) -> None:
    session, shell = session_for(tmp_path)
    read = session.execute("t", [Run(("true",)), Write(str(tmp_path / "f"), "x"),
                                 Local(("true",))], then_read=[None])
    assert read is None
    assert len(shell.commands) == 1
    # invoke pumps a stdin a byte per 10 ms: no round trip sends one (bulk data goes by
    # converse, on a channel of its own)
    assert shell.stdins == [None]


def test_actions_batch_and_write_atomically(tmp_path: Any) -> None:
    target = tmp_path / "etc" / "hosts"
    target.parent.mkdir()
    target.write_text("old\n")
    target.chmod(0o640)
    session, shell = session_for(tmp_path)
    session.execute("hosts", [Write(str(target), "new 'quoted' $(not run)\n"),
                              Run(("touch", str(tmp_path / "ran")))])
    assert len(shell.commands) == 1
    assert target.read_text() == "new 'quoted' $(not run)\n"
    assert target.stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "ran").exists()
    assert not list(target.parent.glob(".nodeprov.*"))


def test_a_write_to_a_link_replaces_its_target_and_keeps_the_link(tmp_path: Any) -> None:
    """As Ansible's lineinfile and blockinfile (os.path.realpath of the path) do."""
    kept = tmp_path / "data" / "hosts"
    kept.parent.mkdir()
    kept.write_text("old\n")
    kept.chmod(0o644)
    (tmp_path / "etc").mkdir()
    link = tmp_path / "etc" / "hosts"
    link.symlink_to("../data/hosts")
    session, _ = session_for(tmp_path)
    session.execute("hosts", [Write(str(link), "new\n")])
    assert link.is_symlink() and os.readlink(link) == "../data/hosts"
    assert kept.read_text() == "new\n" and kept.stat().st_mode & 0o777 == 0o644
    assert not list(kept.parent.glob(".nodeprov.*")) and not list(link.parent.glob(".nodeprov.*"))


def test_a_link_of_another_user_is_not_followed_nor_replaced(tmp_path: Any) -> None:
    """A user's link must not aim root's write at a file of the link's choosing."""
    kept = tmp_path / "shadow"
    kept.write_text("secret\n")
    link = tmp_path / "hosts"
    link.symlink_to(kept)
    os.lchown(link, 65534, 65534)
    session, _ = session_for(tmp_path)
    with pytest.raises(CommandFailed, match="is a symbolic link of uid 65534; nodeprov follows "
                       "root's links only"):
        session.execute("hosts", [Write(str(link), "new\n")])
    assert kept.read_text() == "secret\n" and link.is_symlink()


def test_failure_names_the_failing_action(tmp_path: Any) -> None:
    session, _ = session_for(tmp_path)
    with pytest.raises(CommandFailed) as caught:
        session.execute("firewall", [Run(("true",)),
                                     Run(("sh", "-c", "echo boom >&2; exit 3")),
                                     Run(("touch", str(tmp_path / "never")))])
    error = caught.value
    assert error.returncode == 3 and "boom" in error.output
    assert str(error).startswith("node1: firewall: 'sh -c echo boom >&2; exit 3' exited 3: boom")
    assert not (tmp_path / "never").exists()


def test_a_failed_action_skips_the_read_after_it(tmp_path: Any) -> None:
    session, shell = session_for(tmp_path)
    with pytest.raises(CommandFailed) as caught:
        session.execute("t", [Run(("false",))], then_read=[Probe(("echo", "read"))])
    assert caught.value.command == "false" and len(shell.commands) == 1


def test_become_sends_password_on_stdin_only(tmp_path: Any) -> None:
    session, shell = session_for(tmp_path, become=True, become_password="s3cret")
    session.run(["true"])
    prompt = session._sudo
    assert shell.commands[0].startswith(f"sudo -S -p '{prompt.text}' -- sh -c ")
    assert shell.commands[0].endswith(f" {prompt.mark} true")
    assert "s3cret" not in shell.commands[0] and shell.stdins[0] is None


class BrokenPut(LocalShell):
    def sftp(self) -> BrokenPut:
        return self

    def put(self, local: str, remote: str, callback: Any = None) -> None:
        from paramiko import SSHException

        raise SSHException("Channel closed.")


def test_a_failed_upload_names_node_task_and_cause(tmp_path: Any) -> None:
    session, _ = session_for(tmp_path)
    session._connection = BrokenPut(str(tmp_path))
    (tmp_path / "wheel.whl").write_text("")
    upload = Upload(str(tmp_path / "wheel.whl"), "/var/cache/w.whl")
    with pytest.raises(HostError, match="^node1: torch: upload to /var/cache/w.whl failed: "
                       "Channel closed.$"):
        session.execute("torch", [upload])
    session._lost = "the node answered no SSH keepalive for 15 s"  # the keepalive dropped it
    with pytest.raises(HostError, match="^node1: torch: connection lost during upload to "
                       "/var/cache/w.whl: the node answered no SSH keepalive for 15 s"):
        session.execute("torch", [upload])


class CopyingPut(LocalShell):
    """paramiko's SFTPClient as upload uses it: put tells its callback after each 1000 bytes
    (paramiko: 32 KiB), chmod."""

    def sftp(self) -> CopyingPut:
        return self

    def put(self, local: str, remote: str, callback: Any = None) -> None:
        data = Path(local).read_bytes()
        with open(remote, "wb") as copy:
            for start in range(0, len(data), 1000):
                copy.write(data[start:start + 1000])
                if callback:
                    callback(min(start + 1000, len(data)), len(data))

    def chmod(self, path: str, mode: int) -> None:
        os.chmod(path, mode)


def test_an_upload_tells_its_progress_once_at_start_and_once_at_end_in_a_log(
        tmp_path: Any) -> None:
    wheels, target = tmp_path / "torch-2.13.0-cp311", tmp_path / "on-node"
    wheels.mkdir()
    target.mkdir()
    for name, size in (("a.whl", 1000), ("b.whl", 2500), ("c.whl", 500)):
        (wheels / name).write_bytes(b"w" * size)
    shown = io.StringIO()
    transfers = Transfers(Console(file=shown, width=200), live=False)
    session = Session(Host(name="node1", address="10.0.0.11", node_address="10.0.0.11"),
                      SshOptions(), None, transfers)
    session._connection = CopyingPut(str(tmp_path))
    session.execute("torch", [Upload(str(wheels), str(target))])
    assert sorted(p.name for p in target.iterdir()) == ["a.whl", "b.whl", "c.whl"]
    lines = shown.getvalue().splitlines()
    assert lines[0] == "node1 | torch: torch-2.13.0-cp311 | 4.0 kB to send"
    assert lines[1].startswith("node1 | torch: torch-2.13.0-cp311 | sent 4.0 kB in ")
    assert len(lines) == 2

    session._connection = BrokenPut(str(tmp_path))
    with pytest.raises(HostError):
        session.execute("torch", [Upload(str(wheels), str(target))])
    assert shown.getvalue().splitlines()[-1].startswith(
        "node1 | torch: torch-2.13.0-cp311 | failed after 0 bytes in ")


def test_a_live_upload_moves_its_bar_as_the_bytes_go(tmp_path: Any) -> None:
    (tmp_path / "w.whl").write_bytes(b"w" * 3000)
    (tmp_path / "w.whl").chmod(0o640)
    transfers = Transfers(Console(file=io.StringIO(), force_terminal=True), live=True)
    seen: list[float] = []

    class Watching(CopyingPut):
        def put(self, local: str, remote: str, callback: Any = None) -> None:
            def told(done: int, total: int) -> None:
                callback(done, total)
                seen.append(transfers.renderable[0].tasks[0].completed)  # all nodes

            super().put(local, remote, told)

    session = Session(Host(name="node1", address="10.0.0.11", node_address="10.0.0.11"),
                      SshOptions(), None, transfers)
    session._connection = Watching(str(tmp_path))
    session.execute("torch", [Upload(str(tmp_path / "w.whl"), str(tmp_path / "copy.whl"))])
    assert seen == [1000, 2000, 3000]  # during the put, as each block went
    bars = {task.description: task for task in transfers.renderable[0].tasks}
    assert bars["all nodes"].completed == bars["all nodes"].total == 3000
    assert (tmp_path / "copy.whl").stat().st_mode & 0o777 == 0o640  # its mode kept
