"""Shared fixtures: local test clusters (``nodeprov.testbed``) for integration tests.

    @pytest.mark.integration
    def test_apply(testbed: Testbed) -> None:          # 3 nodes + outsider, once per session
        subprocess.run(["nodeprov", "apply", str(testbed.inventory_path)], check=True)
        assert "node2" in testbed.exec("node1", "cat", "/etc/hosts").stdout

    @pytest.mark.integration
    def test_firewall(make_testbed: MakeTestbed) -> None:   # fresh nodes to wreck
        bed = make_testbed(nodes=2, outsider=True)

Tests marked ``integration`` are skipped, with the reason, where no testbed can run (not root,
no namespaces, a tool missing); CI runs as root, so they run there.
"""

from __future__ import annotations

import functools
import signal
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from nodeprov.testbed.cluster import Testbed
from nodeprov.testbed.environment import problems
from nodeprov.testbed.lifecycle import temporary
from tests.mirrors import LOCAL_MIRRORS

MakeTestbed = Callable[..., Testbed]


@pytest.fixture(autouse=True)
def _no_ansible_settings_of_this_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    """nodeprov reads ANSIBLE_* variables as Ansible does: none of the developer's reach a
    test (a test sets its own)."""
    import os

    for name in [name for name in os.environ if name.startswith("ANSIBLE_")]:
        monkeypatch.delenv(name)


@pytest.fixture(autouse=True)
def _reports_follow_the_schema(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every JSON report written in a test is checked against report.schema.json."""
    from nodeprov import jsonreport
    from tests.report_schema import checked_writer

    broken: list[str] = []
    monkeypatch.setattr(jsonreport, "write_report",
                        checked_writer(jsonreport.write_report, broken))
    yield
    assert not broken, broken[0]


@pytest.fixture(autouse=True)
def _no_package_index(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Unit tests read no package index: the torch choice falls back to nodeprov's table, as on
    an offline admin machine (tests that read an index serve one on 127.0.0.1)."""
    from nodeprov.tasks.torch import choice
    from nodeprov.variants import index

    def offline(url: str) -> str:
        raise index.IndexUnreadable(f"{url}: offline (tests read no index)")

    monkeypatch.setattr(index, "read_url", offline)
    choice.release_builds.cache_clear()
    yield
    choice.release_builds.cache_clear()


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """--doctest-modules is for nodeprov's docstrings: here only test modules are collected,
    never helpers (tests/bench/pyinfra/*.py import pyinfra, which is not installed)."""
    if collection_path.suffix == ".py" and not collection_path.name.startswith(("test_",
                                                                                 "conftest")):
        return True
    return None


@functools.cache
def requires_root_namespaces() -> str | None:
    """Why no testbed can run on this machine, or None if one can (checked once)."""
    found = problems()
    return "; ".join(found) if found else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reason = requires_root_namespaces()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=f"integration test needs a local testbed: {reason}")
    for item in items:
        if "integration" in item.keywords:
            item.add_marker(skip)


def _skip_without_testbed() -> None:
    reason = requires_root_namespaces()
    if reason is not None:
        pytest.skip(f"needs a local testbed: {reason}")


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


@contextmanager
def _sigterm_runs_cleanup() -> Iterator[None]:
    """Turn SIGTERM into SystemExit, so `finally` blocks take testbeds down before exit."""
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


@pytest.fixture(scope="session")
def testbed() -> Iterator[Testbed]:
    """3 nodes and the outsider, shared by the whole session; always taken down at its end."""
    _skip_without_testbed()
    with _sigterm_runs_cleanup(), temporary(nodes=3, outsider=True,
                                            shared=LOCAL_MIRRORS) as shared:
        yield shared


@pytest.fixture
def make_testbed() -> Iterator[MakeTestbed]:
    """``make_testbed(nodes=2, outsider=False)``: fresh testbeds, taken down after the test;
    ``shared=()`` for nodes that see no mirror, ``sshd_settings={"MaxStartups": "2:100:2"}``."""
    _skip_without_testbed()
    with _sigterm_runs_cleanup(), ExitStack() as made:
        def make(nodes: int = 2, outsider: bool = False, **options: Any) -> Testbed:
            options.setdefault("shared", LOCAL_MIRRORS)
            return made.enter_context(temporary(nodes=nodes, outsider=outsider, **options))

        yield make


@pytest.fixture(autouse=True)
def _no_user_ssh_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tests never read the developer's ~/.ssh (their inventories name their ssh_config)."""
    monkeypatch.setattr("nodeprov.inventory.sshconfigs.USER_SSH_CONFIG",
                        str(tmp_path / "no-ssh-config"))


UNREACHABLE_PLAYBOOK = """\
- name: Cluster network
  hosts: all
  tasks:
    - {name: Firewall, firewall: {subnet: "{{ node_subnet }}"}, tags: [firewall]}
    - {name: Names, hosts: {}, tags: [hosts]}
"""


@pytest.fixture()
def unreachable(tmp_path: Path) -> tuple[Path, Path]:
    """An inventory of two nodes nobody listens for, and a playbook for them."""
    (tmp_path / "known_hosts").write_text("")
    (tmp_path / "ssh_config").write_text(
        f"Host *\n  UserKnownHostsFile {tmp_path / 'known_hosts'}\n  ConnectTimeout 5\n")
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(
        "all:\n  vars: {node_subnet: 127.0.0.0/8, ssh_config_file: ssh_config, ansible_port: 9}"
        "\n  hosts:\n    node1: {ansible_host: 127.0.0.1}\n    node2: {ansible_host: 127.0.0.2}\n")
    playbook = tmp_path / "playbook.yaml"
    playbook.write_text(UNREACHABLE_PLAYBOOK)
    return inventory, playbook
