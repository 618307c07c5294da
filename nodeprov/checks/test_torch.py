"""torch in the venv imports and works: the torch task's own final check (the expected version
and CUDA variant, gloo, and on GPU nodes CUDA and the NCCL torch pins), run on every node at
once. The venv and torch tasks' plans read what is installed; only importing it shows that it
runs (a broken library path, a driver that no longer loads)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from nodeprov.checks import Drift
from nodeprov.errors import HostError
from nodeprov.inventory import Host
from nodeprov.tasks import torch
from nodeprov.tasks.base import Context, TaskFailed
from nodeprov.tasks.torch.params import TorchParams

if TYPE_CHECKING:
    from nodeprov.checks.cluster import Cluster

AREA = "torch"


def wanted_build(context: Context, params: TorchParams) -> tuple[str, str]:
    """(variant, expected ``torch.__version__``) for this node, chosen as the torch task does."""
    variant = torch.choose(context, params)[0]
    return variant, f"{params.version}+{variant}"


@pytest.fixture(scope="module")
def imports(cluster: Cluster) -> dict[str, str | None]:
    """Each checked node's torch import problems (None: fine), all nodes at once: an import of
    torch takes seconds."""
    def try_import(node: Host) -> str | None:
        if isinstance(cluster.gathered[node.name], str):
            return None  # unreachable: its checks fail on that already
        params = cluster.params(node, AREA)
        if params is None:
            return None
        try:
            variant = wanted_build(cluster.context(node), params)[0]
            check = torch.verify_run(cluster.facts(node.name), params, variant)
            result = cluster.sessions[node.name].run(check.argv, task=AREA)
        except (HostError, TaskFailed) as error:
            return str(error)
        return None if result.exit_code == 0 else (
            result.stderr.strip().splitlines() or [f"exited {result.exit_code}"])[-1]
    return dict(zip((node.name for node in cluster.targets), cluster.each(try_import),
                    strict=True))


def test_imports(imports: dict[str, str | None], node: Host, context: Context,
                 params: TorchParams, drift: Drift) -> None:
    problem = imports[node.name]
    try:
        expected = wanted_build(context, params)[1]
    except TaskFailed as error:  # the torch task's plan says so too
        pytest.skip(str(error))
    assert problem is None, drift.line(f"importing torch: {problem}",
                                       f"torch {expected} importing cleanly")
