"""The hosts task on recorded /etc/hosts and cloud.cfg files: exact plans and no-op notes."""

from __future__ import annotations

import dataclasses
import json
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from nodeprov.inventory import Host
from nodeprov.remote import reader
from nodeprov.remote.facts import Facts
from nodeprov.tasks.base import Context, ParamError, Plan, TaskFailed, Write, parse_params
from nodeprov.tasks.hosts import CLOUD_CFG, CLOUD_DROPIN, CLOUD_DROPIN_TEXT, HostsParams, plan
from nodeprov.tasks.textfiles import blocks
from nodeprov.testbed.cluster import Testbed
from tests.tasks.kit import make_facts

DATA = Path(__file__).parent / "data"
# (inventory name, subnet address, hostname, fqdn the node reports)
NODES = [("node1", "10.0.0.11", "node1", "node1.cluster.local"),
         ("node2", "10.0.0.12", "gpu2", "gpu2"),
         ("node3", "10.0.0.13", "node3", "node3")]
BLOCK_LINES = ["10.0.0.11 node1.cluster.local node1", "10.0.0.12 gpu2 node2",
               "10.0.0.13 node3"]


def node_facts(hostname: str, fqdn: str) -> Facts:
    return make_facts(hostname=hostname, fqdn=fqdn)


def context(node: str = "node1", nodes: list[tuple[str, str, str, str]] = NODES,
            unreachable: tuple[str, ...] = ()) -> Context:
    cluster = {name: (Host(name, address, address),
                      None if name in unreachable else node_facts(hostname, fqdn))
               for name, address, hostname, fqdn in nodes}
    host, facts = cluster[node]
    assert facts is not None
    return Context(host, facts, cluster)


def probe_output(found: dict[str, str | None]) -> str:
    """What the hosts probe prints for these files (None: absent)."""
    return reader.files_output(found)


DEFAULTS = HostsParams(domain="cluster.local")  # node1 reports node1.cluster.local


def run(hosts: str | None, *, ctx: Context | None = None, params: HostsParams = DEFAULTS,
        cloud: Mapping[str, str | None] | None = None) -> Plan:
    """The plan for ``hosts`` as the file's text, and cloud-init's files."""
    return plan(ctx or context(), params, probe_output({params.path: hosts, **(cloud or {})}))


def block(result: Plan) -> list[str]:
    lines = blocks.block_lines(written(result), "hosts")
    assert lines is not None
    return lines


def written(result: Plan, path: str = "/etc/hosts") -> str:
    writes = [action for change in result.changes for action in change.actions
              if isinstance(action, Write) and action.path == path]
    assert len(writes) == 1
    return writes[0].content


def test_debian_default_comments_out_127_0_1_1_and_lists_every_node() -> None:
    result = run((DATA / "hosts-debian.txt").read_text())
    assert [change.summary for change in result.changes] == [
        "/etc/hosts: list 3 nodes; comment out '127.0.1.1\\tnode1.cluster.local\\tnode1'"]
    new = written(result)
    assert new == (DATA / "hosts-debian.expected.txt").read_text()
    assert "+# nodeprov: 127.0.1.1\tnode1.cluster.local\tnode1" in result.changes[0].diff
    again = run(new)
    assert again.in_sync and again.notes == (
        "/etc/hosts lists the 3 nodes and maps no node name elsewhere",)


def test_user_lines_are_kept_byte_for_byte() -> None:
    old = (DATA / "hosts-custom.txt").read_text()
    new = written(run(old))
    assert new == (DATA / "hosts-custom.expected.txt").read_text()
    # a name mapped to its own subnet address is no conflict; other names on a line stay
    assert "\n10.0.0.12 gpu2-old node2\n10.0.0.11 node1.cluster.local\n::1 localhost\n" in new
    assert ("# nodeprov: 127.0.0.1 localhost node1   # node1 here is a leftover\n"
            "127.0.0.1 localhost\n") in new
    assert run(new).in_sync


def test_a_begin_marker_without_its_end_is_refused_and_nothing_written() -> None:
    # the old plan appended a block; the next one deleted "192.168.1.5 nas" and the line
    # above it, between the stray BEGIN and the block's END
    old = f"127.0.0.1 localhost\n{blocks.begin_marker('hosts')}\n192.168.1.5 nas\n"
    with pytest.raises(TaskFailed, match=re.escape(
            "/etc/hosts: line 2: '# BEGIN nodeprov hosts' has no '# END nodeprov hosts' after "
            "it; add the END line where the block ends, or remove the BEGIN line")):
        run(old)


@pytest.mark.parametrize("odd", ["\x0c", "\x1c", "\x85", "\u2028"])
def test_a_line_break_python_sees_in_a_comment_moves_no_line_into_the_block(odd: str) -> None:
    # str.splitlines ends a line at these, the block's markers only at "\n": the line above
    # the block was taken for one inside it, and Debian's 127.0.1.1 line there was kept
    old = (f"# notes{odd}more notes\n127.0.1.1 node1\n{blocks.begin_marker('hosts')}\n"
           f"{chr(10).join(BLOCK_LINES)}\n{blocks.end_marker('hosts')}\n")
    assert written(run(old)) == old.replace("\n127.0.1.1 node1\n", "\n# nodeprov: 127.0.1.1 "
                                            "node1\n")


def test_existing_block_is_updated_in_place() -> None:
    new = written(run((DATA / "hosts-block.txt").read_text()))
    assert new == ("127.0.0.1 localhost\n" + blocks.begin_marker("hosts") + "\n"
                   + "\n".join(BLOCK_LINES) + "\n" + blocks.end_marker("hosts") + "\n"
                   "192.168.1.5 nas  # added after nodeprov\n")


def test_missing_file_is_created() -> None:
    assert block(run(None)) == BLOCK_LINES


def test_conflicts_kept_when_not_fixing_are_what_the_user_must_remove_by_line() -> None:
    old = (DATA / "hosts-debian.txt").read_text()
    result = run(old, params=HostsParams(fix_conflicts=False, domain="cluster.local"))
    assert [change.summary for change in result.changes] == ["/etc/hosts: list 3 nodes"]
    assert written(result) == blocks.replace_block(old, "hosts", BLOCK_LINES)
    kept = run(written(result), params=HostsParams(fix_conflicts=False, domain="cluster.local"))
    assert not kept.changes and not kept.in_sync and kept.warnings == ()
    assert kept.conflicts == result.conflicts == (
        "/etc/hosts:2 '127.0.1.1\\tnode1.cluster.local\\tnode1' maps node1.cluster.local, node1 "
        "to 127.0.1.1, not 10.0.0.11 (or set hosts_fix_conflicts: true): comment it out: "
        "sed -i '/^127\\.0\\.1\\.1.node1\\.cluster\\.local.node1$/s/^/# /' /etc/hosts",)
    sed, in_place, script, path = shlex.split(kept.conflicts[0].rpartition(": ")[2])
    assert (sed, in_place, path) == ("sed", "-i", "/etc/hosts")
    removed = subprocess.run(["sed", script], input=written(result), capture_output=True,
                             text=True, check=True).stdout
    assert removed == written(result).replace("127.0.1.1", "# 127.0.1.1")
    assert run(removed, params=HostsParams(fix_conflicts=False, domain="cluster.local")).in_sync


SAME_NAMES = [("node1", "10.0.0.11", "node1", "node1"), ("node2", "10.0.0.12", "node2", "node2"),
              ("node3", "10.0.0.13", "node3", "node3")]
SAME_BLOCK = blocks.replace_block("127.0.0.1 localhost\n", "hosts", [
    "10.0.0.11 node1", "10.0.0.12 node2", "10.0.0.13 node3"])


@pytest.mark.parametrize("stale", [
    SAME_BLOCK + "10.1.2.77 node1\n",  # after the block, as #32 appended it
    SAME_BLOCK.replace("localhost\n", "localhost\n10.1.2.77 node1\n")])  # and before it
def test_a_stale_line_for_a_node_whose_hostname_is_its_inventory_name_is_commented_out(
        stale: str) -> None:
    """#32: a node's own hostname equal to its inventory name was taken for a reported name,
    so the stale line stayed and the block got '10.0.0.11 ' with no name at all."""
    result = run(stale, ctx=context("node2", SAME_NAMES))
    assert [change.summary for change in result.changes] == [
        "/etc/hosts: comment out '10.1.2.77 node1'"]
    assert written(result) == stale.replace("10.1.2.77 node1", "# nodeprov: 10.1.2.77 node1")
    assert all(len(line.split()) > 1 for line in block(result)) and not result.warnings
    assert run(written(result), ctx=context("node2", SAME_NAMES)).in_sync
    kept = run(stale, ctx=context("node2", SAME_NAMES), params=HostsParams(fix_conflicts=False))
    assert not kept.changes
    number = stale.split("\n").index("10.1.2.77 node1") + 1  # getaddrinfo answers it anywhere
    assert kept.conflicts == (f"/etc/hosts:{number} '10.1.2.77 node1' maps node1 to 10.1.2.77, "
                              "not 10.0.0.11 (or set hosts_fix_conflicts: true): comment it out: "
                              "sed -i '/^10\\.1\\.2\\.77 node1$/s/^/# /' /etc/hosts",)


def test_every_node_gets_the_same_block() -> None:
    for node in ("node1", "node2", "node3"):
        assert block(run(None, ctx=context(node))) == BLOCK_LINES


def test_unreachable_node_keeps_its_known_names() -> None:
    old = blocks.replace_block("", "hosts", ["10.0.0.13 node3.cluster.local node3"])
    result = run(old, ctx=context(unreachable=("node3",)))
    assert block(result)[2] == "10.0.0.13 node3.cluster.local node3"
    assert result.warnings == ("node3 is unreachable: listed as node3.cluster.local node3 (run "
                               "again once it is up to list its own hostname)",)
    first_run = run(None, ctx=context(unreachable=("node3",)))
    assert block(first_run)[2] == "10.0.0.13 node3"


def test_two_nodes_with_one_hostname_fail_and_neither_gets_it() -> None:
    nodes = [("node1", "10.0.0.11", "debian", "debian"), ("node2", "10.0.0.12", "debian", ""),
             ("node3", "10.0.0.13", "node3", "")]
    for node, other in (("node1", "node2"), ("node2", "node1")):
        with pytest.raises(TaskFailed, match=f"{node} and {other} both report the hostname "
                                             "'debian': listed for neither"):
            run(None, ctx=context(node, nodes))
    assert names_of(run(None, ctx=context("node3", nodes))) == {
        "10.0.0.11": ["node1"], "10.0.0.12": ["node2"], "10.0.0.13": ["node3"]}


def names_of(result: Plan) -> dict[str, list[str]]:
    return {line.split()[0]: line.split()[1:] for line in block(result)}


def test_fqdns_are_listed_first_only_under_hosts_domain() -> None:
    assert block(run(None)) == BLOCK_LINES
    result = run(None, params=HostsParams())
    assert block(result) == ["10.0.0.11 node1", "10.0.0.12 gpu2 node2", "10.0.0.13 node3"]
    assert result.warnings == ("node1 reports the FQDN 'node1.cluster.local', which /etc/hosts "
                               "does not list: a name with dots is listed only under a domain "
                               "set as hosts_domain",)


def test_a_node_naming_itself_after_a_public_name_is_listed_nowhere_under_it() -> None:
    nodes = [("node1", "10.0.0.11", "node1", "node1"),
             ("node2", "10.0.0.12", "download", "download.pytorch.org")]
    for node in ("node1", "node2"):
        assert names_of(run(None, ctx=context(node, nodes)))["10.0.0.12"] == [
            "download", "node2"]
    assert "'download.pytorch.org'" in run(None, ctx=context("node2", nodes)).warnings[0]
    dotted = [("node1", "10.0.0.11", "download.pytorch.org", "download.pytorch.org")]
    assert names_of(run(None, ctx=context("node1", dotted)))["10.0.0.11"] == [
        "download", "node1"]


@pytest.mark.parametrize("hostname", ["localhost", "ip6-loopback", "LOCALHOST",
                                      "localhost.localdomain"])
def test_a_node_naming_itself_localhost_fails_and_the_others_keep_localhost(
        hostname: str) -> None:
    nodes = [("node1", "10.0.0.11", "node1", "node1"), ("node2", "10.0.0.12", hostname, "")]
    with pytest.raises(TaskFailed, match="node2 reports the hostname"):
        run(None, ctx=context("node2", nodes))
    old = "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n"
    result = run(old, ctx=context("node1", nodes))
    assert written(result).startswith(old)  # nothing commented out
    assert names_of(result)["10.0.0.12"] == ["node2"]


@pytest.mark.parametrize("claimed", ["node1", "NODE1", "gpu-a.lab"])
def test_a_node_claiming_another_hosts_inventory_name_or_address_fails_naming_both(
        claimed: str) -> None:
    nodes = [("node1", "10.0.0.11", "node1", "node1"), ("node2", "10.0.0.12", "node2", "")]
    ctx = context("node2", nodes)
    claiming = node_facts(claimed.split(".")[0], claimed)
    cluster = {"node1": (Host("node1", "gpu-a.lab", "10.0.0.11"), ctx.cluster["node1"][1]),
               "node2": (ctx.cluster["node2"][0], claiming)}
    domain = HostsParams(domain="lab")
    with pytest.raises(TaskFailed, match=f"node2 reports the (hostname|FQDN) '{claimed}', which "
                                         "names the inventory host node1: listed for node1 only"):
        run(None, ctx=Context(cluster["node2"][0], claiming, cluster), params=domain)
    on_node1 = run(None, ctx=Context(cluster["node1"][0], context().facts, cluster),
                   params=domain)
    assert "gpu-a.lab" not in block(on_node1)[1] and block(on_node1)[0].startswith("10.0.0.11 ")


def test_a_line_mapping_another_nodes_own_name_elsewhere_stays() -> None:
    """node2 calls itself 'pypi': node1's line for its mirror must not be commented out."""
    nodes = [("node1", "10.0.0.11", "node1", ""), ("node2", "10.0.0.12", "pypi", "")]
    old = "127.0.0.1 localhost\n10.1.1.1 pypi\n"
    result = run(old, ctx=context("node1", nodes))
    assert "\n10.1.1.1 pypi\n" in written(result)
    assert names_of(result)["10.0.0.12"] == ["node2"]
    assert ("/etc/hosts: '10.1.1.1 pypi' maps node2's name 'pypi' elsewhere: kept, and 'pypi' "
            "not listed for node2") in result.warnings[0]
    on_node2 = run(old, ctx=context("node2", nodes))  # its own name, on itself
    assert "# nodeprov: 10.1.1.1 pypi" in written(on_node2)
    inventory_name = run(old.replace("pypi", "node2"), ctx=context("node1", nodes))
    assert "# nodeprov: 10.1.1.1 node2" in written(inventory_name)


def test_names_listed_before_for_a_host_now_down_are_checked_again() -> None:
    old = blocks.replace_block("", "hosts", ["10.0.0.13 download.pytorch.org localhost node3"])
    assert block(run(old, ctx=context(unreachable=("node3",))))[2] == "10.0.0.13 node3"


def test_fqdn_that_is_not_the_hosts_own_is_ignored() -> None:
    nodes = [("n1", "10.0.0.11", "node1", "localhost")]
    assert block(run(None, ctx=context("n1", nodes))) == ["10.0.0.11 node1 n1"]


def test_cloud_init_managing_hosts_gets_the_drop_in() -> None:
    ubuntu = (DATA / "hosts-cloud-ubuntu.cfg").read_text()
    hosts = (DATA / "hosts-debian.expected.txt").read_text()
    managed = {CLOUD_CFG: ubuntu, "/etc/cloud/cloud.cfg.d/50-image.cfg":
               (DATA / "hosts-cloud-manage.cfg").read_text()}
    result = run(hosts, cloud=managed)
    assert [change.summary for change in result.changes] == [
        "stop cloud-init rewriting /etc/hosts at boot (/etc/cloud/cloud.cfg.d/50-image.cfg sets "
        "manage_etc_hosts: True)"]
    assert written(result, CLOUD_DROPIN) == CLOUD_DROPIN_TEXT
    after = run(hosts, cloud={**managed, CLOUD_DROPIN: CLOUD_DROPIN_TEXT})
    assert after.in_sync and after.notes[1] == (
        f"cloud-init leaves /etc/hosts alone (manage_etc_hosts is off in {CLOUD_DROPIN})")
    untouched = run(hosts, cloud={CLOUD_CFG: ubuntu})
    assert untouched.in_sync and untouched.notes[1] == (
        "cloud-init leaves /etc/hosts alone (manage_etc_hosts is off)")


@pytest.mark.parametrize("setting", ["template", "localhost", "yes", "'True'"])
def test_every_managing_value_is_recognised(setting: str) -> None:
    hosts = (DATA / "hosts-debian.expected.txt").read_text()
    result = run(hosts, cloud={CLOUD_CFG: f"manage_etc_hosts: {setting}\n"})
    assert written(result, CLOUD_DROPIN) == CLOUD_DROPIN_TEXT


def test_later_cloud_file_overriding_the_drop_in_is_said_by_hand_by_line() -> None:
    hosts = (DATA / "hosts-debian.expected.txt").read_text()
    pve = "/etc/cloud/cloud.cfg.d/99_pve.cfg"
    cloud = {CLOUD_CFG: "manage_etc_hosts: true\n", pve: "# Proxmox\nmanage_etc_hosts: template\n",
             "/etc/cloud/cloud.cfg.d/10-bad.cfg": "a: [b\n"}
    result = run(hosts, cloud=cloud)
    assert written(result, CLOUD_DROPIN) == CLOUD_DROPIN_TEXT
    assert len(result.warnings) == 1
    assert result.warnings[0].startswith("/etc/cloud/cloud.cfg.d/10-bad.cfg is not valid YAML")
    assert result.conflicts == (
        f"{pve}:2 'manage_etc_hosts: template' comes after {CLOUD_DROPIN}, so it wins: cloud-init "
        f"will rewrite /etc/hosts at boot: comment it out: sed -i "
        f"'/^manage_etc_hosts: template$/s/^/# /' {pve}",)
    fixed = run(hosts, cloud={**cloud, pve: "# Proxmox\n", CLOUD_DROPIN: CLOUD_DROPIN_TEXT})
    assert not fixed.changes and not fixed.conflicts
    flow = run(hosts, cloud={**cloud, pve: "{manage_etc_hosts: true}\n"})
    assert flow.conflicts == (f"{pve} sets manage_etc_hosts: True after {CLOUD_DROPIN}, so it "
                              "wins: cloud-init will rewrite /etc/hosts at boot: remove that "
                              "setting",)


def test_other_path_ignores_cloud_init() -> None:
    params = HostsParams(path="/tmp/hosts")
    result = run(None, params=params, cloud={CLOUD_CFG: "manage_etc_hosts: true\n"})
    assert [action.path for change in result.changes for action in change.actions
            if isinstance(action, Write)] == ["/tmp/hosts"]


def test_bad_params() -> None:
    with pytest.raises(ParamError) as error:
        parse_params(HostsParams, {"fix_conflicts": "maybe"})
    assert error.value.field == "fix_conflicts"
    with pytest.raises(ParamError, match="not an absolute path") as error:
        parse_params(HostsParams, {"path": "etc/hosts"})
    assert error.value.field == "path"
    assert parse_params(HostsParams, {"fix_conflicts": "false"}) == HostsParams(
        fix_conflicts=False)


def test_probe_reads_the_files_and_the_cloud_drop_ins(tmp_path: Path) -> None:
    (tmp_path / "cloud.cfg.d").mkdir()
    (tmp_path / "cloud.cfg.d" / "a.cfg").write_text("manage_etc_hosts: true")
    (tmp_path / "cloud.cfg.d" / "b.txt").write_text("not read")
    (tmp_path / "hosts").write_text("127.0.0.1 localhost\n\n")
    probe = reader.read_many_probe(str(tmp_path / "hosts"), str(tmp_path / "cloud.cfg"),
                                  f"{tmp_path}/cloud.cfg.d/*.cfg", f"{tmp_path}/none/*.cfg")
    done = subprocess.run(probe.argv, capture_output=True, text=True, check=True)
    assert reader.observed_files(done.stdout) == {
        str(tmp_path / "hosts"): "127.0.0.1 localhost\n\n", str(tmp_path / "cloud.cfg"): None,
        str(tmp_path / "cloud.cfg.d" / "a.cfg"): "manage_etc_hosts: true"}


# --- on a testbed: the hosts, ipv6 and nccl_env tasks together --------------------------------

PLAYBOOK = """\
- name: Cluster network
  hosts: all
  vars:
    nccl_env: {NCCL_DEBUG: INFO, NCCL_IB_DISABLE: "1"}
  tasks:
    - name: Cluster names
      hosts: {fix_conflicts: "{{ hosts_fix_conflicts }}"}
    - name: IPv6
      ipv6: {state: "{{ ipv6 }}"}
    - name: NCCL environment
      nccl_env: {subnet: "{{ node_subnet }}", ifname: "{{ nccl_socket_ifname }}",
                 extra: "{{ nccl_env }}"}
"""
USER_HOSTS_LINE = "192.168.50.5\tnas.lab nas   # my NAS, tabs and all\n"
USER_ENV_LINE = "http_proxy=http://proxy.lab:3128/\n"


def nodeprov(bed: Testbed, playbook: Path, *options: str) -> dict[str, Any]:
    """``nodeprov apply --json -`` on the testbed; the parsed report."""
    done = subprocess.run([sys.executable, "-m", "nodeprov", "apply", str(bed.inventory_path),
                           "-p", str(playbook), "--json", "-", *options],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def statuses(report: dict[str, Any]) -> dict[str, list[str]]:
    return {name: [task["status"] for task in host["tasks"]]
            for name, host in report["hosts"].items()}


def read(bed: Testbed, node: str, path: str) -> str:
    return bed.exec(node, "cat", path, check=True).stdout


def write(bed: Testbed, node: str, path: str, text: str) -> None:
    bed.exec(node, "sh", "-c", 'cat > "$1"', "write", path, input=text, check=True)


@pytest.mark.integration
def test_three_tasks_on_a_testbed(make_testbed: Callable[..., Testbed], tmp_path: Path) -> None:
    bed = make_testbed(nodes=3)
    playbook = tmp_path / "network.yaml"
    playbook.write_text(PLAYBOOK)
    write(bed, "node1", "/etc/hosts", read(bed, "node1", "/etc/hosts") + USER_HOSTS_LINE)
    write(bed, "node1", "/etc/environment", USER_ENV_LINE)
    before = {node: read(bed, node, "/etc/hosts") for node in bed.nodes}

    assert statuses(nodeprov(bed, playbook, "--check")) == {
        node: ["changed"] * 3 for node in bed.nodes}
    assert statuses(nodeprov(bed, playbook)) == {node: ["changed"] * 3 for node in bed.nodes}
    assert statuses(nodeprov(bed, playbook)) == {node: ["ok"] * 3 for node in bed.nodes}
    report = nodeprov(bed, playbook, "--check")
    assert statuses(report) == {node: ["ok"] * 3 for node in bed.nodes}
    assert {host["round_trips"] for host in report["hosts"].values()} == {1}

    block = [f"{bed.address(node)} {node}" for node in bed.nodes]
    for node in bed.nodes:
        loopback = f"127.0.1.1\t{node}\n"
        assert read(bed, node, "/etc/hosts") == blocks.replace_block(
            before[node].replace(loopback, f"# nodeprov: {loopback}"), "hosts", block)
        for other in bed.nodes:
            assert bed.exec(node, "getent", "hosts", other).stdout.split() == [
                bed.address(other), other]
        for _ in range(2):  # as applied, then as a reboot would apply it
            assert bed.exec(node, "cat", "/proc/sys/net/ipv6/conf/all/disable_ipv6",
                            "/proc/sys/net/ipv6/conf/default/disable_ipv6").stdout == "1\n1\n"
            bed.exec(node, "sysctl", "--system")  # kernel.* keys are read-only in a node
        env = bed.ssh(node, "env", check=True).stdout.splitlines()
        assert {"NCCL_SOCKET_IFNAME==eth0", "GLOO_SOCKET_IFNAME=eth0", "NCCL_DEBUG=INFO",
                "NCCL_IB_DISABLE=1"} <= set(env)
        assert read(bed, node, "/etc/nccl.conf") == blocks.replace_block(
            "", "nccl", ["NCCL_SOCKET_IFNAME==eth0", "NCCL_DEBUG=INFO", "NCCL_IB_DISABLE=1"])
    assert USER_HOSTS_LINE in read(bed, "node1", "/etc/hosts")
    assert "http_proxy=http://proxy.lab:3128/" in bed.ssh("node1", "env").stdout.splitlines()

    # drift made by hand on node2 shows as exactly that diff
    hosts, environment = (read(bed, "node2", path) for path in ("/etc/hosts", "/etc/environment"))
    node3 = f"{bed.address('node3')} node3\n"
    drifted = {"/etc/hosts": hosts.replace(node3, "10.1.2.3 node3\n"),
               "/etc/environment": environment.replace('GLOO_SOCKET_IFNAME="eth0"',
                                                       'GLOO_SOCKET_IFNAME="lo"')}
    for path, text in drifted.items():
        write(bed, "node2", path, text)
    report = nodeprov(bed, playbook, "--check", "--diff")
    assert statuses(report) == {"node1": ["ok"] * 3, "node2": ["changed", "ok", "changed"],
                                "node3": ["ok"] * 3}
    assert [diff for task in report["hosts"]["node2"]["tasks"] for diff in task["diffs"]] == [
        blocks.unified_diff("/etc/hosts", drifted["/etc/hosts"], hosts),
        blocks.unified_diff("/etc/environment", drifted["/etc/environment"], environment)]

    # --limit still lists every node in node1's block
    write(bed, "node1", "/etc/hosts", before["node1"])
    report = nodeprov(bed, playbook, "--limit", "node1")
    assert statuses(report) == {"node1": ["changed", "ok", "ok"]}
    assert blocks.block_lines(read(bed, "node1", "/etc/hosts"), "hosts") == block


def test_a_node_whose_address_only_it_can_tell_keeps_its_line_while_down() -> None:
    cluster = dict(context().cluster)
    cluster["node3"] = (Host("node3", "node3.example.org", ""), None)
    ctx = Context(cluster["node1"][0], context().facts, cluster)
    old = blocks.replace_block("", "hosts", ["10.0.0.13 node3.cluster.local node3"])
    assert block(run(old, ctx=ctx))[2] == "10.0.0.13 node3.cluster.local node3"
    first_run = run(None, ctx=ctx)
    assert block(first_run) == BLOCK_LINES[:2]
    assert first_run.warnings == ("node3 is not listed: its address in node_subnet comes from "
                                  "the node, which could not tell it (run again once it can)",)


def test_a_hostname_dns_gives_another_machine_is_listed_on_its_node_only() -> None:
    """#32: 'hostname mirror' on node2 put the site's mirror (served by DNS) at node2 on every
    node; DNS, asked on node2, says 'mirror' is 10.9.9.9: only node2 lists it, for itself."""
    cluster = dict(context("node1", [("node1", "10.0.0.11", "node1", "node1"),
                                     ("node2", "10.0.0.12", "mirror", "mirror")]).cluster)
    mirror = make_facts(hostname="mirror", fqdn="mirror", hostname_in_dns=("10.9.9.9",))
    cluster["node2"] = (cluster["node2"][0], mirror)
    on_node1 = run(None, ctx=Context(cluster["node1"][0], context().facts, cluster))
    assert names_of(on_node1)["10.0.0.12"] == ["node2"] and on_node1.warnings == ()
    on_node2 = run(None, ctx=Context(cluster["node2"][0], mirror, cluster))
    assert names_of(on_node2)["10.0.0.12"] == ["mirror", "node2"]
    assert on_node2.warnings == (
        "node2 reports the hostname 'mirror', which DNS resolves to 10.9.9.9 (not 10.0.0.12): "
        "listed on node2 only; a job whose peers reach node2 by 'mirror' goes there: set "
        "node2's hostname to its inventory name (hostnamectl set-hostname node2), or have the "
        "job use the inventory name",)
    # DNS naming the node itself, or nothing: listed everywhere, as before
    for answer in (("10.0.0.12",), ()):
        cluster["node2"] = (cluster["node2"][0], dataclasses.replace(mirror,
                                                                     hostname_in_dns=answer))
        on_node1 = run(None, ctx=Context(cluster["node1"][0], context().facts, cluster))
        assert names_of(on_node1)["10.0.0.12"] == ["mirror", "node2"]


def test_a_nodes_name_under_hosts_domain_is_the_clusters_own() -> None:
    """node1.cluster.local (node1's name under hosts_domain) displaces a stale line on every
    node, as node1 does, and no other node may report it."""
    stale = SAME_BLOCK.replace("localhost\n", "localhost\n10.1.2.77 node1.cluster.local\n")
    nodes = [("node1", "10.0.0.11", "node1", "node1.cluster.local"), *SAME_NAMES[1:]]
    result = run(stale, ctx=context("node2", nodes))
    assert "\n# nodeprov: 10.1.2.77 node1.cluster.local\n" in written(result)
    assert names_of(result)["10.0.0.11"] == ["node1.cluster.local", "node1"]
    claiming = [nodes[0], ("node2", "10.0.0.12", "node1", "node1.cluster.local"), nodes[2]]
    with pytest.raises(TaskFailed, match="node2 reports the FQDN 'node1.cluster.local', which "
                                         "names the inventory host node1"):
        run(None, ctx=context("node2", claiming))
