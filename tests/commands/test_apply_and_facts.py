"""`nodeprov apply` and `facts` end to end over real SSH on the local test cluster."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from nodeprov.cli import app
from nodeprov.tasks.textfiles import blocks
from nodeprov.testbed.cluster import Testbed
from tests.conftest import MakeTestbed

pytestmark = pytest.mark.integration

PLAYBOOK = """\
- name: demo
  hosts: all
  tasks:
    - name: login notice
      block:
        path: /etc/motd
        name: notice
        lines: ["node {{ inventory_hostname }} in {{ node_subnet }}"]
      tags: [motd]
"""


def apply(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["apply", *args])
    return result.exit_code, result.stdout, result.stderr


def report(path: Path) -> dict:  # type: ignore[type-arg]
    return json.loads(path.read_text())  # type: ignore[no-any-return]


def test_four_steps_and_one_round_trip(make_testbed: MakeTestbed, tmp_path: Path) -> None:
    cluster = make_testbed(nodes=2)
    playbook = tmp_path / "site.yaml"
    playbook.write_text(PLAYBOOK)
    inventory = str(cluster.inventory_path)
    before = cluster.exec("node1", "cat", "/etc/motd").stdout
    machine_motd = Path("/etc/motd").read_bytes()

    code, out, _ = apply(inventory, "-p", str(playbook), "--check", "--diff")
    assert code == 0 and "node1 | login notice | changed" in out and "+node node1 in" in out
    assert cluster.exec("node1", "cat", "/etc/motd").stdout == before

    code, out, _ = apply(inventory, "-p", str(playbook), "--json", str(tmp_path / "1.json"))
    assert code == 0 and "2 hosts, 2 tasks changed, 0 hosts failed" in out
    motd = cluster.exec("node1", "cat", "/etc/motd").stdout
    assert motd.startswith(before) and f"node node1 in {cluster.subnet}\n" in motd

    code, out, _ = apply(inventory, "-p", str(playbook), "--json", str(tmp_path / "2.json"))
    assert code == 0 and "2 hosts, 0 tasks changed, 0 hosts failed" in out
    second = report(tmp_path / "2.json")
    for host in second["hosts"].values():
        assert host["status"] == "ok"
        assert (host["connections"], host["round_trips"]) == (1, 1)

    code, out, _ = apply(inventory, "-p", str(playbook), "--check")
    assert code == 0 and "0 tasks would change" in out
    assert Path("/etc/motd").read_bytes() == machine_motd


def test_json_to_stdout_is_alone(make_testbed: MakeTestbed, tmp_path: Path) -> None:
    cluster = make_testbed(nodes=1)
    playbook = tmp_path / "site.yaml"
    playbook.write_text(PLAYBOOK)
    code, out, err = apply(str(cluster.inventory_path), "-p", str(playbook), "--json", "-")
    assert code == 0
    document = json.loads(out)
    assert document["ok"] is True and document["hosts"]["node1"]["status"] == "changed"
    assert "recap" in err


def test_unreachable_node_does_not_stop_the_others(make_testbed: MakeTestbed,
                                                    tmp_path: Path) -> None:
    cluster = make_testbed(nodes=3)
    playbook = tmp_path / "site.yaml"
    playbook.write_text(PLAYBOOK)
    cluster.exec("node2", "sh", "-c", "kill $(cat /run/sshd.pid 2>/dev/null || pgrep -o sshd)")
    code, out, _ = apply(str(cluster.inventory_path), "-p", str(playbook), "--tags", "motd")
    assert code == 1
    assert "node2 | unreachable | node2: cannot connect to" in out
    assert (f"re-run only those: nodeprov apply {cluster.inventory_path} -p {playbook} "
            "--tags motd --limit node2") in out
    for node in ("node1", "node3"):
        assert "node " + node in cluster.exec(node, "cat", "/etc/motd").stdout


def test_host_keys_refused_then_accepted_then_changed_refused(make_testbed: MakeTestbed,
                                                              tmp_path: Path) -> None:
    cluster = make_testbed(nodes=1)
    known = tmp_path / "known_hosts"
    config = tmp_path / "ssh_config"
    config.write_text(f"Host *\n  UserKnownHostsFile {known}\n")
    inventory = yaml.safe_load(cluster.inventory_path.read_text())
    inventory["all"]["vars"]["ssh_config_file"] = str(config)
    inventory_path = tmp_path / "inventory.yaml"
    inventory_path.write_text(yaml.safe_dump(inventory))

    result = CliRunner().invoke(app, ["facts", str(inventory_path)])
    assert result.exit_code == 1 and "unknown host key for" in result.stdout
    assert "--accept-new-host-keys" in result.stdout and not known.exists()

    result = CliRunner().invoke(app, ["facts", str(inventory_path), "--accept-new-host-keys"])
    assert result.exit_code == 0, result.stdout
    recorded = known.read_text()
    assert cluster.address("node1") in recorded and "ssh-ed25519" in recorded

    assert CliRunner().invoke(app, ["facts", str(inventory_path)]).exit_code == 0

    address = cluster.address("node1")
    known.write_text(f"{address} ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsab"
                     "gH5C9okWi0dh2l9GKJl\n")
    result = CliRunner().invoke(app, ["facts", str(inventory_path), "--accept-new-host-keys"])
    assert result.exit_code == 1 and "CHANGED" in result.stdout


def test_facts_json(testbed: Testbed) -> None:
    result = CliRunner().invoke(app, ["facts", str(testbed.inventory_path), "--json", "-"])
    assert result.exit_code == 0
    document = json.loads(result.stdout)
    assert (document["command"], document["ok"]) == ("facts", True)
    assert sorted(document["hosts"]) == testbed.nodes
    node1 = document["hosts"]["node1"]["facts"]
    assert node1["hostname"] == "node1" and node1["gpu"] == "none"
    assert testbed.address("node1") in node1["interfaces"]


ROLLING = """\
- name: rolling notice
  hosts: all
  serial: [2, 1]
  max_fail_percentage: 0
  tasks:
    - name: login notice
      block: {path: /etc/motd, name: notice, lines: ["{{ motd_line }}"]}
- name: Prove the cluster can train
  hosts: all
  job: {}
  tags: [job]
"""
READ_ONLY_MOTD = ("touch /etc/motd && mount --bind /etc/motd /etc/motd "
                  "&& mount -o remount,bind,ro /etc/motd")


def test_serial_rolls_in_batches_and_stops_when_too_many_fail(make_testbed: MakeTestbed,
                                                              tmp_path: Path) -> None:
    cluster = make_testbed(nodes=3)
    playbook = tmp_path / "rolling.yaml"
    playbook.write_text(ROLLING)
    args = [str(cluster.inventory_path), "-p", str(playbook), "--skip-tags", "job"]

    def motd(node: str) -> list[str] | None:
        return blocks.block_lines(cluster.exec(node, "cat", "/etc/motd").stdout, "notice")

    code, out, _ = apply(*args, "-e", "motd_line=first", "--json", str(tmp_path / "1.json"))
    first = report(tmp_path / "1.json")
    assert code == 0, out
    assert [(b["number"], b["hosts"], b["failed"]) for b in first["batches"]] == [
        (1, ["node1", "node2"], []), (2, ["node3"], [])]
    assert first["stopped"] is None and first["proofs"] == [] and "job:" not in out
    assert "batch 2 of play 'rolling notice': node3" in out
    assert [motd(node) for node in cluster.nodes] == [["first"]] * 3

    cluster.exec("node2", "sh", "-c", READ_ONLY_MOTD, check=True)
    code, out, _ = apply(*args, "-e", "motd_line=second", "--json", str(tmp_path / "2.json"))
    second = report(tmp_path / "2.json")
    assert code == 1
    stopped = ("play 'rolling notice', batch 1: 1 of 2 hosts failed, more than "
               "max_fail_percentage 0%")
    assert second["stopped"] == stopped and f"stopped: {stopped}" in out
    assert [(b["hosts"], b["failed"]) for b in second["batches"]] == [
        (["node1", "node2"], ["node2"])]
    assert sorted(second["hosts"]) == ["node1", "node2"] and "not run: node3" in out
    assert [motd(node) for node in cluster.nodes] == [["second"], ["first"], ["first"]]
