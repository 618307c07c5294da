"""`nodeprov facts` over real SSH on a test-cluster node whose own /sys/class/infiniband is a
reconstructed tree (tests/data/rdma/README.md), mounted in the node's private mount namespace;
the other node has no RDMA, as this kernel has none."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nodeprov.cli import app
from tests.conftest import MakeTestbed
from tests.remote.rdma_trees import DATA, build_tree

pytestmark = pytest.mark.integration


def copy_script(tree: Path, target: str) -> str:
    """sh lines writing ``tree``'s folders and files under ``target`` on the node."""
    lines = [f"mkdir -p {shlex.quote(target)}"]
    for path in sorted(tree.rglob("*")):
        there = shlex.quote(f"{target}/{path.relative_to(tree)}")
        lines.append(f"mkdir -p {there}" if path.is_dir() else
                     f"printf %s {shlex.quote(path.read_text())} > {there}")
    return "\n".join(lines)


# /sys/class is the node's sysfs (read-only, no infiniband folder): a tmpfs over it holds the
# mount point, and the node's own /sys/class/net is bound back beside it
MOUNT = """\
mkdir -p /run/class-net && mount --bind /sys/class/net /run/class-net
mount -t tmpfs none /sys/class && mkdir /sys/class/net /sys/class/infiniband
mount --bind /run/class-net /sys/class/net && mount --bind /run/ib /sys/class/infiniband
"""


def test_facts_report_a_nodes_own_rdma_tree(make_testbed: MakeTestbed, tmp_path: Path) -> None:
    cluster = make_testbed(nodes=2)
    tree = build_tree(tmp_path / "ib", gids=DATA / "show-gids-nccl-1573-pod-macvlan.txt",
                      state={"state": "4: ACTIVE", "phys_state": "5: LinkUp",
                             "link_layer": "Ethernet"})
    mounted = cluster.exec("node1", "sh", "-c", copy_script(tree, "/run/ib") + "\n" + MOUNT)
    assert mounted.returncode == 0, mounted.stderr
    result = CliRunner().invoke(app, ["facts", str(cluster.inventory_path), "--json", "-"])
    assert result.exit_code == 0, result.output
    hosts = json.loads(result.stdout)["hosts"]
    node1, node2 = hosts["node1"], hosts["node2"]
    assert node1["facts"]["fast interconnect"] == ("mlx5_0/1 RoCE ACTIVE LinkUp; "
                                                   "mlx5_1/1 RoCE ACTIVE LinkUp")
    ports = node1["fabric"]["ports"]
    assert [(gid["index"], gid["type"], gid["netdev"]) for gid in ports[1]["gids"]] == [
        (4, "IB/RoCE v1", "net2"), (5, "RoCE v2", "net2"), (6, "IB/RoCE v1", "net2"),
        (7, "RoCE v2", "net2")]
    # the node's /dev has no infiniband folder: what a container without it shows
    assert node1["fabric"]["char_devices"] == [{"path": "/dev/infiniband", "access": "absent"}]
    assert node1["fabric"]["mtus"]["eth0"] > 0  # its own /sys/class/net, still there
    assert node2["facts"]["fast interconnect"] == "no fast interconnect"
    assert node2["fabric"]["ports"] == []
    table = CliRunner().invoke(app, ["facts", str(cluster.inventory_path)])
    assert "no fast interconnect" in table.stdout and "mlx5_0/1 RoCE" in table.stdout
