"""One test cluster for the network items' drift corpus, provisioned once (2 CPU cores are
shared): each test wrecks it, repairs it as verify printed, and leaves verify clean."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nodeprov.testbed.cluster import Testbed
from nodeprov.testbed.lifecycle import temporary
from tests.checks.drift.printed import PLAYBOOK, applied, clean
from tests.conftest import _sigterm_runs_cleanup, _skip_without_testbed
from tests.mirrors import LOCAL_MIRRORS


@pytest.fixture(scope="session")
def network(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Testbed, Path]]:
    """Three nodes, the network items applied and verify clean; the playbook's path."""
    _skip_without_testbed()
    playbook = tmp_path_factory.mktemp("network") / "network.yaml"
    playbook.write_text(PLAYBOOK)
    with _sigterm_runs_cleanup(), temporary(nodes=3, shared=LOCAL_MIRRORS) as bed:
        applied(bed, playbook)
        clean(bed, playbook)
        yield bed, playbook
