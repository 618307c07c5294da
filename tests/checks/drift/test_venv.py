"""The venv's drift corpus: torch removed, torch replaced by another version, the venv's python
gone (a distribution upgrade). Each is named, the repair runs as printed (torch installed again
from this machine's local mirrors, or the venv rebuilt), verify passes, and the venv's python
imports the expected torch. Two nodes: torch is ~1 GB on each."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from nodeprov.testbed.cluster import Testbed
from tests.checks.drift.printed import applied, clean, named, run_printed, verify
from tests.checks.test_verify_integration import STAND_IN_TORCH
from tests.tasks.torch.test_torch import TEST_VENV, mirror

pytestmark = pytest.mark.integration
PLAYBOOK = """\
- name: Python and torch
  hosts: node1,node2
  tasks:
    - name: Python venv
      venv: {path: "{{ venv_path }}", python_version: "{{ python_version }}",
             index_url: "{{ pip_index_url }}", extra_index_urls: "{{ pip_extra_index_url }}",
             find_links: "{{ pip_find_links }}"}
      tags: [venv]
    - name: torch
      torch: {venv: "{{ venv_path }}", version: "{{ torch_version }}", cuda: "{{ torch_cuda }}",
              index_url: "{{ pip_index_url }}", extra_index_urls: "{{ pip_extra_index_url }}",
              find_links: "{{ pip_find_links }}", numpy: false}
      tags: [venv, torch]
"""
WANTED = "2.13.0+cpu"


@pytest.fixture(scope="module")
def torch_nodes(network: tuple[Testbed, Path], tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[tuple[Testbed, Path]]:
    """torch installed on node1 and node2 from the local mirrors, verify clean; the playbook
    (its inventory, the cluster's with the mirrors named, beside it)."""
    bed, _ = network
    folder = tmp_path_factory.mktemp("venv")
    inventory = yaml.safe_load(bed.inventory_path.read_text())
    inventory["all"]["vars"].update(mirror())
    (folder / "inventory.yaml").write_text(yaml.safe_dump(inventory))
    playbook = folder / "venv.yaml"
    playbook.write_text(PLAYBOOK)
    try:
        applied(bed, playbook, inventory=folder / "inventory.yaml")
        clean(bed, playbook, folder / "inventory.yaml")
        yield bed, playbook
    finally:
        for node in ("node1", "node2"):
            bed.exec(node, "rm", "-rf", "--", str(Path(TEST_VENV).parent))


def imported(bed: Testbed, node: str) -> str:
    """torch.__version__ as the venv's python imports it, or why it cannot."""
    shown = bed.exec(node, f"{TEST_VENV}/bin/python", "-W", "ignore", "-c",
                     "import torch; print(torch.__version__)")
    return shown.stdout.strip() or shown.stderr.strip().splitlines()[-1]


def repaired(bed: Testbed, playbook: Path, node: str, line: str) -> None:
    """Run the line's repair as printed; then verify passes and the venv imports the torch."""
    assert line.endswith(f" --limit {node} --tags venv"), line
    run_printed(bed, line)
    clean(bed, playbook, playbook.parent / "inventory.yaml")
    assert imported(bed, node) == WANTED


def test_torch_removed_is_installed_again(torch_nodes: tuple[Testbed, Path]) -> None:
    bed, playbook = torch_nodes
    bed.exec("node1", "sh", "-c", f"rm -rf {TEST_VENV}/lib/python3*/site-packages/torch "
             f"{TEST_VENV}/lib/python3*/site-packages/torch-*.dist-info", check=True)
    assert imported(bed, "node1") == "ModuleNotFoundError: No module named 'torch'"
    code, lines = verify(bed, playbook, inventory=playbook.parent / "inventory.yaml")
    line = named(lines, "node1", "torch", f"plan: install torch=={WANTED} ")
    assert code == 1 and "(torch not installed)" in line, line
    repaired(bed, playbook, "node1", line)


def test_torch_replaced_by_another_version_is_put_back(torch_nodes: tuple[Testbed, Path]
                                                       ) -> None:
    bed, playbook = torch_nodes
    bed.exec("node2", "sh", "-c", STAND_IN_TORCH, "stand-in", TEST_VENV, "2.12.1+cpu",
             check=True)
    assert imported(bed, "node2") == "2.12.1+cpu"
    code, lines = verify(bed, playbook, inventory=playbook.parent / "inventory.yaml")
    line = named(lines, "node2", "torch", f"plan: install torch=={WANTED} ")
    assert code == 1 and "(found torch 2.12.1+cpu, CUDA none)" in line, line
    repaired(bed, playbook, "node2", line)


def test_the_venvs_python_gone_rebuilds_the_venv(torch_nodes: tuple[Testbed, Path]) -> None:
    bed, playbook = torch_nodes
    # what a distribution upgrade leaves: the links to the python it removed, dangling
    bed.exec("node1", "sh", "-c", f"for link in {TEST_VENV}/bin/python*; do "
             'ln -sfn /usr/bin/python3.10 "$link"; done', check=True)
    code, lines = verify(bed, playbook, inventory=playbook.parent / "inventory.yaml")
    line = named(lines, "node1", "venv", f"plan: rebuild venv {TEST_VENV}: its python (3.11")
    assert code == 1 and "no longer runs" in line, line
    repaired(bed, playbook, "node1", line)
