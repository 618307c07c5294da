"""JSON reports for the HTML report's tests: recorded ones (``data/``, see its README) and
reports of any size generated from them::

    recorded("apply-3")                  # the report a real 3-node apply wrote
    big_apply(128)                       # 128 hosts, their tasks, the matrix, the sweep
    big_verify(128)                      # drift on some nodes, a broken matrix (no job)

The generated matrices are made by nodeprov's own code (``Matrix.to_json``), so each
problem line says what nodeprov would say; each generated report follows the schema.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from nodeprov.proof.matrix import Check, Matrix

DATA = Path(__file__).parent / "data"
SUBNET = "10.1.{}.{}"
HOSTILE = "<script>alert(1)</script></svg></table><img src=x onerror=alert(2)>"


def recorded(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))
    return loaded


def names(count: int) -> list[str]:
    return [f"gpu-node-{index:03d}" for index in range(1, count + 1)]


def address(index: int) -> str:
    return SUBNET.format(index // 250, index % 250 + 2)


def matrix(nodes: list[str], blocked: str | None = None,
           unresolved: tuple[str, str] | None = None) -> dict[str, Any]:
    """Every node to every node; ``blocked``'s firewall drops the rendezvous port from the
    others, ``unresolved[0]`` cannot resolve ``unresolved[1]``."""
    checks = []
    for source in nodes:
        for index, target in enumerate(nodes):
            dns = "unresolved" if (source, target) == unresolved else "ok"
            checks.append(Check(source, target, "dns", dns, repr(target),
                                "Temporary failure in name resolution" if dns != "ok"
                                else address(index)))
            checks.append(Check(source, target, "eph", "ok", f"{address(index)}:40001"))
            rdzv = "timeout" if target == blocked and source != target else "ok"
            checks.append(Check(source, target, "rdzv", rdzv, f"{address(index)}:29500"))
    return Matrix(tuple(nodes), tuple(checks), duration_s=2.5).to_json()


def big_apply(count: int) -> dict[str, Any]:
    """The recorded apply's node1, ``count`` times over (durations varied, one node failed),
    the matrix clean and the recorded sweep as the job's result."""
    report = recorded("apply-3")
    template = report["hosts"]["node1"]
    nodes = names(count)
    report["hosts"] = {}
    for index, name in enumerate(nodes):
        host = copy.deepcopy(template)
        for task in host["tasks"]:
            task["duration"] *= 1 + (index % 11) / 20
        host["duration"] = sum(task["duration"] for task in host["tasks"]) + 1.5
        report["hosts"][name] = host
    failed = report["hosts"][nodes[count // 3]]
    failed["status"] = "failed"
    failed["tasks"][-1].update(status="failed", error=f"{nodes[count // 3]}: nccl_env: "
                               "'tee /etc/nccl.conf' exited 1: No space left on device")
    failed["error"] = failed["tasks"][-1]["error"]
    report["batches"][0]["hosts"] = nodes
    report["ok"] = False
    proof = report["proofs"][0]
    proof["connectivity"] = matrix(nodes)
    result = proof["job"]["result"]
    result.update(nnodes=count, world_size=count, hostnames=nodes)
    proof["job"]["nodes"] = dict.fromkeys(nodes, proof["job"]["nodes"]["node1"])
    proof["job"]["tails"] = {}
    return report


def big_verify(count: int) -> dict[str, Any]:
    """The recorded drift report's shape on ``count`` nodes: the last node's firewall lost its
    rendezvous rule (drift, and a broken matrix column), node 5 lost its /etc/hosts lines."""
    report = recorded("verify-3-drift")
    nodes = names(count)
    renamed = {"node1": nodes[4], "node3": nodes[-1]}  # where the recorded drift was

    def drifted(check: dict[str, Any]) -> dict[str, Any]:
        return {key: _renamed(value, renamed) for key, value in check.items()}

    recorded_drift = {(renamed[check["node"]], check["area"]): drifted(check)
                      for check in report["checks"] if check["outcome"] == "failed"}
    passing = [check for check in recorded("verify-3")["checks"] if check["node"] == "node1"]
    report["checks"] = [
        recorded_drift.pop((name, check["area"]), None)
        or {**check, "node": name, "check": check["check"].replace("node1", name)}
        for name in nodes for check in passing]
    report["drift"] = [check["message"] for check in report["checks"]
                       if check["outcome"] == "failed"]
    proof = report["proofs"][0]
    proof["connectivity"] = matrix(nodes, blocked=nodes[-1],
                                   unresolved=(nodes[4], nodes[min(9, count - 2)]))
    proof["failures"] = proof["connectivity"]["problems"]
    return report


def _renamed(value: Any, renamed: dict[str, str]) -> Any:
    if not isinstance(value, str):
        return value
    for old, new in renamed.items():
        value = value.replace(old, new)
    return value


def hostile() -> dict[str, Any]:
    """The recorded apply, with ``HOSTILE`` where a node's words go: node2's name (as if an
    inventory named it so), node1's error and its first task's, and node1's resolver error
    for node3 in the matrix (the cell and its problem line)."""
    text = json.dumps(recorded("apply-3")).replace('"node2"', json.dumps("node2" + HOSTILE))
    report: dict[str, Any] = json.loads(text)
    node1 = report["hosts"]["node1"]
    node1.update(status="failed", error=HOSTILE)
    node1["tasks"][0].update(status="failed", error=HOSTILE)
    matrix = report["proofs"][0]["connectivity"]
    for check in matrix["checks"]:
        if (check["source"], check["target"], check["kind"]) == ("node1", "node3", "dns"):
            check.update(status="unresolved", observed=HOSTILE)
    matrix["cells"]["node1"]["node3"] = "dns"
    matrix["problems"] = [f"node1 -> node3: node1 cannot resolve 'node3' ({HOSTILE}): /etc/hosts "
                          "on node1 lacks the node names (nodeprov apply --limit node1 --tags "
                          "hosts)"]
    matrix["ok"] = report["ok"] = report["proofs"][0]["ok"] = False
    return report
