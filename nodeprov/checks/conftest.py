"""pytest wiring for the checks: the inventory's nodes, one test per node.

    pytest -p nodeprov.checks --pyargs nodeprov.checks --inventory inventory.yaml

A check takes ``node`` (the inventory Host it checks), ``host`` (testinfra's Host for it),
``cluster`` (every node's facts, the playbook: cluster.py), ``params`` (what the playbook asks
of this node's area), ``fresh`` (what a new SSH session sees on each node: fresh.py) and
``drift`` (builds the assertion message)::

    def test_node1_resolves(fresh, node, drift):
        assert fresh[node.name].resolved["node1"], drift.line("node1 resolves to nothing", "...")
"""

from __future__ import annotations

import getpass
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import testinfra.host

from nodeprov.checks import AREA_PROPERTY, NODE_PROPERTY, Drift
from nodeprov.checks.cluster import OPENED_KEY, Cluster
from nodeprov.checks.fresh import AREAS as FRESH_AREAS
from nodeprov.checks.fresh import Fresh, read_all_fresh
from nodeprov.config.defaults import AnsibleOptions
from nodeprov.errors import InputError
from nodeprov.inventory import Host
from nodeprov.inventory.extravars import parse_extra_vars
from nodeprov.inventory.opening import Surroundings, open_inventory
from nodeprov.playbook import default_playbook, load_playbook
from nodeprov.remote.hostkeys import SshFiles
from nodeprov.remote.options import SshOptions
from nodeprov.tasks.base import Context, Plan, TaskFailed
from nodeprov.tasks.registry import REGISTRY
from nodeprov.util.redact import Redactor

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
    opened = config.stash.get(OPENED_KEY, None)
    try:
        extra_args = tuple(config.getoption("extra_vars", default=None) or ())
        extra = parse_extra_vars(extra_args)
        # verify's, else read here with ansible.cfg's settings and vault passwords
        inventory = opened.inventory if opened is not None and opened.inventory else (
            open_inventory([Path(inventory_arg)], AnsibleOptions(),
                           Surroundings(getpass.getpass, Redactor()), extra_vars=extra).inventory)
        playbook = load_playbook(Path(playbook_arg) if playbook_arg else default_playbook(),
                                 inventory, extra)
        targets = inventory.limited(config.getoption("limit", default=None))
    except InputError as error:
        raise pytest.UsageError(str(error)) from None
    accept_new = bool(config.getoption("accept_new_host_keys", default=False))
    cluster = Cluster(inventory, playbook, playbook_arg, targets,
                      SshOptions(accept_new_host_keys=accept_new), SshFiles(inventory.ssh_configs),
                      extra_vars=extra_args)
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
    opened = request.config.stash.get(OPENED_KEY, None)
    if opened is not None:
        plan.adopt(opened)
        yield plan  # whoever opened the sessions closes them
        return
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
    return Drift(node.name, task_type, str(cluster.inventory.path), tag, cluster.playbook_arg,
                 cluster.extra_vars)


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
def plan(context: Context, task_type: str, params: Any, observed: str) -> Plan:
    """The task's plan here, for an effect check's repair (apply only where it would change a
    file); a plan that fails is empty here: the task's own check says why."""
    try:
        return REGISTRY[task_type].plan(context, params, observed)
    except TaskFailed:
        return Plan()


@pytest.fixture()
def host(cluster: Cluster, node: Host, params: Any) -> testinfra.host.Host:
    """testinfra's Host for ``node`` (replaces testinfra's own ``host`` fixture)."""
    cluster.facts(node.name)  # fails the check with the connection error when unreachable
    return cluster.hosts[node.name]


@pytest.fixture(scope="session")
def fresh(cluster: Cluster) -> dict[str, Fresh | str]:
    """What a new SSH session sees on each checked node (or why it failed), all at once;
    verify's run read it already."""
    if not cluster.fresh:
        chosen = [node for node in cluster.targets
                  if any(cluster.task(node, area) for area in FRESH_AREAS)]
        cluster.fresh = read_all_fresh([node.name for node in chosen], cluster.sessions,
                                       cluster.gathered)
    return cluster.fresh
