"""A testbed as tests and admins use it: its files, addresses, and commands run in its nodes.

    testbed = Testbed.load(Path("/srv/nodeprov-testbed"))
    testbed.exec("node1", "hostname").stdout        # 'node1\\n', through nsenter, no SSH
    testbed.ssh("node2", "cat", "/etc/hosts")       # through real ssh -F DIR/ssh_config
    testbed.exec("outsider", "ping", "-c1", testbed.address("node1"))
"""

from __future__ import annotations

import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nodeprov.errors import NodeprovError
from nodeprov.testbed import probe
from nodeprov.testbed.layout import Layout, checked_dir
from nodeprov.testbed.naming import Names
from nodeprov.testbed.nodeinit import CLEAN_PATH
from nodeprov.testbed.processes import node_processes
from nodeprov.testbed.state import Member, State

# `exec` must not carry the caller's environment (pyenv, a venv, VIRTUAL_ENV) into a node.
NODE_ENV = {"PATH": CLEAN_PATH, "HOME": "/root", "USER": "root", "LOGNAME": "root",
            "SHELL": "/bin/bash", "LANG": "C.UTF-8"}


@dataclass(frozen=True)
class MemberStatus:
    name: str
    address: str
    pid: int | None
    running: bool
    sshd: bool | None  # None for the outsider, which runs no sshd


class Testbed:
    """A testbed that `up` made, as recorded in its directory's state file."""

    __test__ = False  # its name starts with "Test": keep pytest from collecting it

    def __init__(self, state: State) -> None:
        self.state = state
        self.layout = Layout(Path(state.dir))

    @classmethod
    def load(cls, directory: Path) -> Testbed:
        return cls(State.load(Layout(checked_dir(directory)).state_file))

    @property
    def dir(self) -> Path:
        return self.layout.dir

    @property
    def inventory_path(self) -> Path:
        return self.layout.inventory

    @property
    def ssh_config_path(self) -> Path:
        return self.layout.ssh_config

    @property
    def nodes(self) -> list[str]:
        return [node.name for node in self.state.nodes]

    @property
    def subnet(self) -> str:
        return self.state.subnet

    def address(self, name: str) -> str:
        """A node's (or the outsider's) IPv4 address, without prefix length."""
        return self.state.member(name).ip

    def exec_argv(self, name: str, argv: list[str]) -> list[str]:
        """The command line running ``argv`` inside ``name``'s namespaces (net only: outsider)."""
        member = self.state.member(name)
        if member is self.state.outsider:
            return ["nsenter", f"--net=/run/netns/{member.netns}", "--", *argv]
        if member.init is None or not self.running(member):
            raise NodeprovError(f"{name}: testbed: the node is not running (its PID 1 is gone); "
                                f"recreate the testbed: nodeprov testbed down --dir {self.dir}, "
                                "then up")
        # --wd: the node's working folder (/root, nodeinit's); a path given would be opened in
        # this machine's tree, which the node no longer sees
        return ["nsenter", f"--target={member.init.pid}", "--net", "--mount", "--uts", "--ipc",
                "--pid", "--wd", "--", *argv]

    def exec(self, name: str, *argv: str, check: bool = False, input: str | None = None,
             timeout: float | None = None) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` inside a node without SSH, as root with a clean environment."""
        return subprocess.run(self.exec_argv(name, list(argv)), env=NODE_ENV, **_stdin(input),
                              capture_output=True, text=True, check=check, timeout=timeout)

    def ssh(self, name: str, *argv: str, check: bool = False, input: str | None = None,
            timeout: float | None = None) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` on a node through ``ssh -F DIR/ssh_config``."""
        # sshd hands the command to the login shell as one string: quote each word once.
        command = ["ssh", "-F", str(self.ssh_config_path), name, "--", shlex.join(argv)]
        return subprocess.run(command, **_stdin(input), capture_output=True, text=True,
                              check=check, timeout=timeout)

    def running(self, member: Member) -> bool:
        """Is the member's PID 1 running, and the testbed's own (``node_processes``)?"""
        return member.init is not None and member.init in node_processes(
            member.init, member.launcher, Names.for_dir(self.dir).marker)

    def status(self) -> list[MemberStatus]:
        """Every member: is its PID 1 running, does its sshd greet (checked all at once)?"""
        greeted = probe.banners([node.ip for node in self.state.nodes])
        rows = [_row(node, self.running(node), sshd)
                for node, sshd in zip(self.state.nodes, greeted, strict=True)]
        if self.state.outsider:
            outsider = self.state.outsider
            rows.append(_row(outsider, Path("/run/netns", outsider.netns).exists(), None))
        return rows


def _stdin(text: str | None) -> dict[str, Any]:
    """Feed ``text``, or nothing: a command in a node must never read the caller's terminal."""
    return {"stdin": subprocess.DEVNULL} if text is None else {"input": text}


def _row(member: Member, running: bool, sshd: bool | None) -> MemberStatus:
    return MemberStatus(member.name, member.ip, member.init.pid if member.init else None,
                        running, sshd)
