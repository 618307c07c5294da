"""``nodeprov fabric LOG...``: registered on the app by ``cli/__init__.py``::

    nodeprov fabric node1.log node2.log --json fabric.json
    nodeprov fabric train.log --facts facts.json
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from nodeprov.cli.exits import exit_on_error
from nodeprov.cli.options import JsonOpt


def fabric_command(
    logs: Annotated[list[Path], typer.Argument(
        help="NCCL's output with NCCL_DEBUG=INFO: a training log, nodeprov run's node logs, a "
        "pasted file; ranks of many nodes mixed.", metavar="LOG...", show_default=False,
        readable=False)],
    json_path: JsonOpt = None,
    facts: Annotated[Path | None, typer.Option(
        "--facts", help="The nodes' facts (`nodeprov facts --json FILE`): name the causes a log "
        "cannot prove (a port down, memlock, no peer-memory module, ACS, MTU, RoCE GID, "
        "NUMA).", metavar="REPORT", show_default=False)] = None,
) -> None:
    """Say which network NCCL took on each node (IB, RoCE, EFA, Socket), its devices,
    GPUDirect RDMA and the intra-node path, and why a path is slower than the nodes have.
    Exit 0: the fast fabric is used or none is seen; 3: a slower path; 2: unreadable input."""
    from nodeprov.commands.fabric import run_fabric

    with exit_on_error():
        code = run_fabric(logs, json_path, facts)
    raise typer.Exit(code)
