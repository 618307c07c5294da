"""The nodes the checks look at: one reused SSH session per node, its facts, and a testinfra
Host over that session, opened here (``pytest`` on its own) or adopted from verify's plan run.

    cluster = Cluster(inventory, playbook, None, targets, SshOptions(), SshFiles())
    cluster.connect()                      # or cluster.adopt(Opened(sessions, facts, probed))
    cluster.facts("node2").hostname

Commands run over nodeprov's own Session, so the SSH settings (user, port, key, ssh_config,
become) and host-key rules are those of ``nodeprov apply``: an unknown host key is refused.
testinfra's paramiko backend would trust it (it sets WarningPolicy and loads no known_hosts).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import pytest
import testinfra.host
from testinfra.backend.base import BaseBackend, CommandResult

from nodeprov.checks.fresh import Fresh
from nodeprov.engine.node_address import with_node_addresses
from nodeprov.errors import HostError, InputError
from nodeprov.inventory import Host, Inventory
from nodeprov.playbook import Playbook, TaskSpec
from nodeprov.remote.actions import Probe
from nodeprov.remote.facts import Facts
from nodeprov.remote.hostkeys import SshFiles
from nodeprov.remote.options import SshOptions
from nodeprov.remote.session import Session
from nodeprov.tasks.base import Context
from nodeprov.tasks.registry import REGISTRY
from nodeprov.util.fanout import DEFAULT_FORKS, on_every, raise_first

T = TypeVar("T")

class SessionBackend(BaseBackend):  # type: ignore[misc]
    """testinfra backend over a nodeprov Session: one SSH connection, reused by every command."""

    NAME = "nodeprov"

    def __init__(self, session: Session) -> None:
        self.session = session
        super().__init__(session.host.name)

    def run(self, command: str, *args: str, **kwargs: Any) -> CommandResult:
        command = self.get_command(command, *args)
        result = self.session.run(["sh", "-c", command], task="verify")
        return self.result(result.exit_code, self.encode(command), result.stdout, result.stderr)


@dataclass
class Cluster:
    """Every inventory node's connection and facts (the hosts check needs all of them)."""

    inventory: Inventory
    playbook: Playbook
    playbook_arg: str | None
    targets: list[Host]
    ssh: SshOptions
    files: SshFiles  # the ssh_config and known_hosts files, read once for every node
    sessions: dict[str, Session] = field(default_factory=dict)
    hosts: dict[str, testinfra.host.Host] = field(default_factory=dict)
    gathered: dict[str, Facts | str] = field(default_factory=dict)
    probed: dict[tuple[str, str], str] = field(default_factory=dict)
    fresh: dict[str, Fresh | str] = field(default_factory=dict)
    extra_vars: tuple[str, ...] = ()  # -e values, as given (the repair command repeats them)
    forks: int = DEFAULT_FORKS  # nodes checked at once

    def connect(self) -> None:
        """Open every node's session and read its facts with its tasks' probes: one round
        trip per node, all nodes at once, as apply's first phase does."""
        checked = {node.name for node in self.targets}

        def open_and_gather(node: Host) -> Facts | str:
            probes = self._early_probes(node) if node.name in checked else {}
            session = Session(node, self.ssh, self.files)
            self.sessions[node.name] = session
            try:
                session.open()
                facts, outputs = session.gather(list(probes.values()))
            except HostError as error:
                return str(error)
            self.probed.update({(node.name, task_type): output
                                for task_type, output in zip(probes, outputs, strict=True)})
            backend = SessionBackend(session)
            self.hosts[node.name] = testinfra.host.Host(backend)
            backend.set_host(self.hosts[node.name])
            return facts

        self.gathered = dict(zip((n.name for n in self.inventory.hosts),
                                 self.each(open_and_gather, self.inventory.hosts), strict=True))

    def adopt(self, opened: Opened) -> None:
        """Use sessions someone else opened, and the facts and probe outputs they read."""
        self.sessions, self.gathered = dict(opened.sessions), dict(opened.gathered)
        self.probed = {(name, task_type): output for name, outputs in opened.probed.items()
                       for task_type, output in outputs.items()}
        self.fresh = dict(opened.fresh)
        self.forks = opened.forks
        gathered = opened.gathered
        sessions = opened.sessions
        for name, facts in gathered.items():
            if isinstance(facts, Facts):
                backend = SessionBackend(sessions[name])
                self.hosts[name] = testinfra.host.Host(backend)
                backend.set_host(self.hosts[name])

    def _early_probes(self, node: Host) -> dict[str, Probe]:
        """{task type: probe} of the node's tasks whose parameters need no facts."""
        probes = {}
        for task_type, task in REGISTRY.items():
            spec = self.task(node, task_type)
            if spec is None or spec.needs_facts:
                continue
            try:
                probe = task.probe(spec.params_for(node, self.inventory.groups, None))
            except InputError:
                continue  # the check's own params fixture reports it
            if probe is not None:
                probes[task_type] = probe
        return probes

    def close(self) -> None:
        for session in self.sessions.values():
            session.close()

    def each(self, work: Callable[[Host], T], nodes: list[Host] | tuple[Host, ...] | None = None
             ) -> list[T]:
        """``work`` for each node (default: the checked ones) in parallel threads."""
        return raise_first(on_every(work, self.targets if nodes is None else nodes,
                                    forks=self.forks))

    def facts(self, name: str) -> Facts:
        """A node's facts; fails the check (as the node's connection error) when unreachable."""
        gathered = self.gathered[name]
        if isinstance(gathered, str):
            pytest.fail(gathered, pytrace=False)
        return gathered

    def context(self, node: Host) -> Context:
        """What the node's task plans see: its facts and every node's (None when unreachable)."""
        facts = {name: gathered for name, gathered in self.gathered.items()
                 if isinstance(gathered, Facts)}
        hosts, _ = with_node_addresses(self.inventory.hosts, facts)
        cluster = {host.name: (host, facts.get(host.name)) for host in hosts}
        return Context(cluster[node.name][0], self.facts(node.name), cluster)

    def task(self, node: Host, task_type: str) -> TaskSpec | None:
        """The playbook's first task of ``task_type`` that runs on ``node``, if any."""
        for play in self.playbook.plays:
            if any(host.name == node.name for host in play.hosts):
                for spec in play.tasks:
                    if spec.type.name == task_type:
                        return spec
        return None

    def params(self, node: Host, task_type: str) -> Any:
        """That task's parameters rendered for ``node`` (None: no such task)."""
        spec = self.task(node, task_type)
        if spec is None:
            return None
        return spec.params_for(node, self.inventory.groups, self.facts(node.name))

    def observe(self, node: Host, task_type: str, params: Any) -> str:
        """What the task's probe prints on ``node`` (read with the facts where it could be)."""
        if (node.name, task_type) not in self.probed:
            probe = REGISTRY[task_type].probe(params)
            self.probed[node.name, task_type] = "" if probe is None else self.sessions[
                node.name].run(probe.argv, task=task_type).stdout
        return self.probed[node.name, task_type]


@dataclass(frozen=True)
class Opened:
    """What verify's plan run read, handed to the checks: every inventory node's open session
    and facts (or why there are none), each node's probe output per task type, and what a new
    session saw on it."""

    sessions: Mapping[str, Session]
    gathered: Mapping[str, Facts | str]
    probed: Mapping[str, Mapping[str, str]]
    fresh: Mapping[str, Fresh | str]  # read_fresh of the nodes whose tasks need it
    forks: int = DEFAULT_FORKS  # verify --forks
    # as verify loaded it (ansible.cfg, vault, -K): the checks use it, not --inventory again
    inventory: Inventory | None = None

    def pytest_configure(self, config: pytest.Config) -> None:
        """As a pytest plugin: the checks' ``cluster`` fixture adopts these."""
        config.stash[OPENED_KEY] = self


OPENED_KEY = pytest.StashKey[Opened]()
