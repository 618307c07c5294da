"""verify's plan results: one per node and task, from a run outcome, without SSH."""

from __future__ import annotations

from pathlib import Path

from nodeprov.checks import Drift
from nodeprov.checks.plans import plan_results
from nodeprov.engine.outcome import HostResult, PlaybookOutcome, TaskResult
from nodeprov.inventory import load_inventory
from nodeprov.playbook import Playbook, TaskSpec, load_playbook

PLAYBOOK = """\
- name: Kernel and names
  hosts: all
  tasks:
    - {name: Buffers, sysctl: {settings: {net.core.somaxconn: 8192}}, tags: [sysctl]}
    - {name: Notice, block: {path: /etc/motd, lines: [hello]}}
"""


def playbook_on(tmp_path: Path, nodes: int) -> Playbook:
    """PLAYBOOK loaded against an inventory of ``nodes`` nodes n1, n2, ... (none reached)."""
    hosts = "".join(f"    n{i}: {{ansible_host: 10.0.0.{i}}}\n" for i in range(1, nodes + 1))
    (tmp_path / "inventory.yaml").write_text(
        f"all:\n  vars: {{node_subnet: 10.0.0.0/24}}\n  hosts:\n{hosts}")
    (tmp_path / "site.yaml").write_text(PLAYBOOK)
    return load_playbook(tmp_path / "site.yaml", load_inventory(tmp_path / "inventory.yaml"))


def drift(node: str, spec: TaskSpec) -> Drift:
    """A node's drift lines for a task, its repair on the task's first tag."""
    return Drift(node, spec.type.name, "inv.yaml", spec.tags[0] if spec.tags else None)


def test_each_node_and_task_is_one_result_a_changed_plan_its_drift_line(tmp_path: Path) -> None:
    playbook = playbook_on(tmp_path, 3)
    failed = "n2: sysctl: no such sysctl on this kernel: net.core.somaxconn"
    outcome = PlaybookOutcome([
        HostResult("n1", "changed", [
            TaskResult("Buffers", "sysctl", "changed", ["set now: net.core.somaxconn=8192"]),
            TaskResult("Notice", "block", "ok", warnings=["motd is a symlink"])]),
        HostResult("n2", "failed", [TaskResult("Buffers", "sysctl", "failed", error=failed),
                                    TaskResult("Notice", "block", "skipped")], error=failed),
        HostResult("n3", "unreachable", error="n3: cannot connect to 10.0.0.3:22")],
        {"n1": None, "n2": None, "n3": None})

    results = plan_results(outcome, playbook, drift)
    assert [(r.check, r.area, r.outcome, r.message) for r in results] == [
        ("plan::Buffers[n1]", "sysctl", "failed", "n1 sysctl: plan: set now: "
         "net.core.somaxconn=8192; repair: nodeprov apply inv.yaml --limit n1 --tags sysctl"),
        ("plan::Notice[n1]", "block", "passed", "n1 block: warning: motd is a symlink"),
        ("plan::Buffers[n2]", "sysctl", "failed", failed),
        ("plan::Notice[n2]", "block", "error", failed),
        ("plan[n3]", None, "error", "n3: cannot connect to 10.0.0.3:22")]
    assert results[0].repair == "nodeprov apply inv.yaml --limit n1 --tags sysctl"


def test_a_conflict_is_said_by_hand_with_an_apply_command_only_where_apply_changes_something(
        tmp_path: Path) -> None:
    playbook = playbook_on(tmp_path, 2)
    removal = "/etc/sysctl.d/99-z.conf:2 sets net.core.somaxconn=128 after ours: remove it"

    def conflicted(node: str, changes: list[str]) -> TaskResult:
        return TaskResult("Buffers", "sysctl", "failed", changes, error=f"{node}: sysctl: "
                          f"{removal}", conflicted=True)

    outcome = PlaybookOutcome([
        HostResult("n1", "failed", [conflicted("n1", []), TaskResult("Notice", "block", "ok")]),
        HostResult("n2", "failed", [conflicted("n2", ["write f"]),
                                    TaskResult("Notice", "block", "ok")])],
        {"n1": None, "n2": None})

    results = plan_results(outcome, playbook, drift)
    assert [(r.outcome, r.message, r.repair) for r in results if r.area == "sysctl"] == [
        ("failed", f"n1 sysctl: by hand: {removal}", ""),
        ("failed", f"n2 sysctl: plan: write f; by hand: {removal}; repair: nodeprov apply "
         "inv.yaml --limit n2 --tags sysctl", "nodeprov apply inv.yaml --limit n2 --tags sysctl")]
