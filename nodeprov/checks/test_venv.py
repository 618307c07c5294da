"""The venv runs a new enough python, and torch in it is the build the cluster's drivers call for:
it imports, with the expected version and CUDA variant, gloo, and (on GPU nodes) CUDA and the
NCCL torch pins. The import test is the torch task's own final check, run on every node at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from nodeprov.checks import Drift
from nodeprov.errors import HostError
from nodeprov.inventory import Host
from nodeprov.tasks import torch, venv
from nodeprov.tasks.base import Context, TaskFailed

if TYPE_CHECKING:
    from nodeprov.checks.conftest import Cluster

AREA = "venv"


def test_venv_runs(observed: str, params: venv.VenvParams, drift: Drift) -> None:
    state = venv.parse_probe(observed)
    expected = f"a venv at {params.path} running python >= {params.python_version}"
    assert state.version is not None, drift.line(f"no venv at {params.path}", expected)
    assert state.runs, drift.line(f"{params.path}/bin/python (python {state.version}) does not "
                                  "run", expected)
    assert venv.at_least(state.version, params.python_version), drift.line(
        f"{params.path} runs python {state.version}", expected)


def wanted_build(context: Context, params: torch.TorchParams) -> tuple[str, str]:
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
        params = cluster.params(node, "torch")
        if params is None:
            return None
        try:
            variant = wanted_build(cluster.context(node), params)[0]
            facts = cluster.facts(node.name)
            gpus = str(facts.gpu.count) if facts.gpu and variant != "cpu" else "0"
            result = cluster.sessions[node.name].run(
                (f"{params.venv}/bin/python", "-c", torch.VERIFY, params.version, variant,
                 torch.variant_cuda(variant) or "", gpus), task="torch")
        except (HostError, TaskFailed) as error:
            return str(error)
        return None if result.exit_code == 0 else (
            result.stderr.strip().splitlines() or [f"exited {result.exit_code}"])[-1]
    return dict(zip((node.name for node in cluster.targets), cluster.each(try_import),
                    strict=True))


class TestTorch:
    @pytest.fixture()
    def task_type(self) -> str:
        return "torch"

    @pytest.fixture()
    def build(self, context: Context, params: torch.TorchParams, drift: Drift) -> tuple[str, str]:
        try:
            return wanted_build(context, params)
        except TaskFailed as error:
            pytest.fail(drift.line(str(error), f"a torch {params.version} build for the cluster"),
                        pytrace=False)

    def test_installed_build(self, observed: str, build: tuple[str, str],
                             params: torch.TorchParams, drift: Drift) -> None:
        variant, expected = build
        problem = torch.torch_problem(torch.parse_probe(observed), params.version, variant)
        assert problem is None, drift.line(f"{params.venv}: {problem}", f"torch {expected}")

    def test_imports(self, imports: dict[str, str | None], node: Host, build: tuple[str, str],
                     drift: Drift) -> None:
        problem = imports[node.name]
        assert problem is None, drift.line(f"importing torch: {problem}",
                                           f"torch {build[1]} importing cleanly")

    def test_packages(self, observed: str, context: Context, params: torch.TorchParams,
                      drift: Drift) -> None:
        state = torch.parse_probe(observed)
        python = state.python or context.facts.python_version or "3"
        missing = venv.unsatisfied(params.packages, state.installed,
                                   venv.marker_environment(python, context.facts.arch))
        assert not missing, drift.line(f"{params.venv} lacks {', '.join(missing)}",
                                       ", ".join(params.packages))
