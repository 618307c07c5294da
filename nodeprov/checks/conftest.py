"""pytest wiring for the checks: the inventory's nodes as testinfra hosts, one test per node.

    pytest -p nodeprov.checks --pyargs nodeprov.checks --inventory inventory.yaml

A check takes ``node`` (the inventory Host it checks), ``host`` (testinfra's Host for it),
``cluster`` (every node's facts, the playbook), ``params`` (what the playbook asks of this
node's area) and ``drift`` (builds the assertion message)::

    def test_ufw_active(node, cluster, drift):
        assert cluster.facts(node.name).ufw_active, drift.line("ufw is inactive", "active")

Commands run over nodeprov's own Session, so the SSH settings (user, port, key, ssh_config,
become) and host-key rules are those of ``nodeprov apply``: an unknown host key is refused.
testinfra's paramiko backend would trust it (it sets WarningPolicy and loads no known_hosts).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest
import testinfra.host
from testinfra.backend.base import BaseBackend, CommandResult

from nodeprov.checks import AREA_PROPERTY, NODE_PROPERTY, Drift
from nodeprov.commands import default_playbook, select_hosts
from nodeprov.errors import HostError, InputError
from nodeprov.facts import Facts
from nodeprov.hostkeys import SshFiles
from nodeprov.inventory import Host, Inventory, load_inventory
from nodeprov.playbook import Playbook, TaskSpec, load_playbook
from nodeprov.session import Session, SshOptions
from nodeprov.tasks.base import Context, Probe
from nodeprov.tasks.registry import REGISTRY

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
        chosen = self.targets if nodes is None else nodes
        with ThreadPoolExecutor(max_workers=max(1, len(chosen))) as pool:
            return list(pool.map(work, chosen))

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
        return Context(node, self.facts(node.name),
                       {host.name: (host, facts.get(host.name)) for host in self.inventory.hosts})

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


_CLUSTER = pytest.StashKey[Cluster]()


def _cluster_plan(config: pytest.Config) -> Cluster:
    """The inventory, playbook and checked nodes from the options (loaded once per run); a
    problem with them is a usage error of every check module."""
    cached = config.stash.get(_CLUSTER, None)
    if cached is not None:
        return cached
    # without `-p nodeprov.checks` the options do not exist; the variable still works
    inventory_arg = (config.getoption("inventory", default=None)
                     or os.environ.get("NODEPROV_INVENTORY"))
    playbook_arg = config.getoption("playbook", default=None)
    if not inventory_arg:
        raise pytest.UsageError("nodeprov checks need an inventory: pytest -p nodeprov.checks "
                                "--pyargs nodeprov.checks --inventory PATH, or set "
                                "NODEPROV_INVENTORY")
    try:
        inventory = load_inventory(Path(inventory_arg))
        playbook = load_playbook(Path(playbook_arg) if playbook_arg else default_playbook(),
                                 inventory)
        targets = select_hosts(inventory, config.getoption("limit", default=None))
    except InputError as error:
        raise pytest.UsageError(str(error)) from None
    accept_new = bool(config.getoption("accept_new_host_keys", default=False))
    cluster = Cluster(inventory, playbook, playbook_arg, targets,
                      SshOptions(accept_new_host_keys=accept_new), SshFiles(inventory.ssh_configs))
    config.stash[_CLUSTER] = cluster
    return cluster


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "node" in metafunc.fixturenames:
        targets = _cluster_plan(metafunc.config).targets
        metafunc.parametrize("node", targets, ids=[node.name for node in targets],
                             indirect=True, scope="module")


@pytest.fixture(scope="session")
def cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    plan = _cluster_plan(request.config)
    try:
        plan.connect()
        yield plan
    finally:
        plan.close()


@pytest.fixture(scope="module")
def node(request: pytest.FixtureRequest) -> Host:
    return request.param  # type: ignore[no-any-return]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Label every check with its node and area, for the verify report."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        area = getattr(getattr(item, "module", None), "AREA", None)
        if callspec is None or "node" not in callspec.params or area is None:
            continue
        item.user_properties.extend([(NODE_PROPERTY, callspec.params["node"].name),
                                     (AREA_PROPERTY, area)])


@pytest.fixture()
def task_type(request: pytest.FixtureRequest) -> str:
    """The task type a check verifies: its module's AREA (a test class may override this)."""
    return str(request.module.AREA)


@pytest.fixture()
def drift(cluster: Cluster, node: Host, task_type: str) -> Drift:
    """Builds this check's drift lines, naming the task's tag in the repair command."""
    spec = cluster.task(node, task_type)
    tag = spec.tags[0] if spec and spec.tags else None
    return Drift(node.name, task_type, str(cluster.inventory.path), tag, cluster.playbook_arg)


@pytest.fixture()
def params(cluster: Cluster, node: Host, task_type: str) -> Any:
    """This node's parameters of the playbook's task (skips the check when it has none)."""
    found = cluster.params(node, task_type)
    if found is None:
        pytest.skip(f"{node.name} {task_type}: the playbook has no {task_type} task for it")
    return found


@pytest.fixture()
def observed(cluster: Cluster, node: Host, task_type: str, params: Any) -> str:
    """What the task's own probe prints on this node: the state apply compares."""
    return cluster.observe(node, task_type, params)


@pytest.fixture()
def context(cluster: Cluster, node: Host, params: Any) -> Context:
    """What the task's plan sees on ``node`` (after ``params``: without the task, skip)."""
    return cluster.context(node)


@pytest.fixture()
def host(cluster: Cluster, node: Host, params: Any) -> testinfra.host.Host:
    """testinfra's Host for ``node`` (replaces testinfra's own ``host`` fixture)."""
    cluster.facts(node.name)  # fails the check with the connection error when unreachable
    return cluster.hosts[node.name]
