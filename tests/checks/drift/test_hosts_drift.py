"""Drift corpus, hosts (#32 items 1-4): what OS updates and quick fixes do to /etc/hosts and
the hostname, on one shared 3-node testbed. Each: verify names it (node, item, cause), the
printed repair run as printed, verify exits 0, and glibc on the node answers as the job needs."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodeprov.testbed.cluster import NODE_ENV, Testbed
from tests.checks.drift.printed import (
    applied,
    drift_lines,
    first_address,
    run_printed,
    shared_cluster,
    subnet_address,
    verify,
)

pytestmark = pytest.mark.integration

Cluster = tuple[Testbed, Path]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from shared_cluster(tmp_path_factory)


@pytest.fixture()
def clean(cluster: Cluster) -> Cluster:
    """The cluster, verify clean before the test wrecks it (each test repairs what it did)."""
    code, lines = verify(*cluster)
    assert code == 0, lines
    return cluster


def names_resolve_on_node2(bed: Testbed) -> bool:
    """glibc on node2 answers each node's name with its subnet address first."""
    return all(first_address(bed, "node2", node) == subnet_address(bed, node)
               for node in ("node1", "node2", "node3"))


# (the wreck on node2, as sh; the start of its plan's drift line)
HOSTS_WRECKS = {
    "stale line after the block": ("echo '10.1.2.77 node1' >> /etc/hosts",
                                   "node2 hosts: plan: /etc/hosts: comment out '10.1.2.77 node1'"),
    "stale line before the block": ("sed -i '1i 10.1.2.77 node1' /etc/hosts",
                                    "node2 hosts: plan: /etc/hosts: comment out '10.1.2.77 "
                                    "node1'"),
    # cloud-init's Debian template (hosts.debian.tmpl): 127.0.1.1 {{fqdn}} {{hostname}}
    "Debian's 127.0.1.1 line back": ("sed -i '1i 127.0.1.1 node2' /etc/hosts",
                                     "node2 hosts: plan: /etc/hosts: comment out '127.0.1.1 "
                                     "node2'"),
    "rewritten /etc/hosts": ("printf '127.0.0.1 localhost\\n' > /etc/hosts",
                             "node2 hosts: plan: /etc/hosts: list 3 nodes"),
}


@pytest.mark.parametrize("wreck", HOSTS_WRECKS)
def test_hosts_drift_is_named_and_its_printed_repair_repairs_it(clean: Cluster,
                                                                 wreck: str) -> None:
    bed, playbook = clean
    command, named = HOSTS_WRECKS[wreck]
    assert bed.exec("node2", "sh", "-c", command).returncode == 0
    lines = drift_lines(bed, playbook)
    assert any(line.startswith(named) for line in lines), lines
    assert all(line.startswith("node2 hosts: ") for line in lines), lines
    run_printed(bed, *lines)
    assert verify(bed, playbook)[0] == 0
    assert names_resolve_on_node2(bed)


@pytest.mark.parametrize("where", ["before", "after"])
def test_a_kept_stale_line_is_said_by_hand_and_its_sed_repairs_it(clean: Cluster,
                                                                    where: str) -> None:
    bed, playbook = clean
    keep = ("-e", "hosts_fix_conflicts=false")
    wreck = ("sed -i '1i 10.1.2.77 node1' /etc/hosts" if where == "before" else
             "echo '10.1.2.77 node1' >> /etc/hosts")
    assert bed.exec("node2", "sh", "-c", wreck).returncode == 0
    lines = drift_lines(bed, playbook, *keep)
    assert any(line.startswith("node2 hosts: by hand: /etc/hosts:") and "'10.1.2.77 node1' "
               "maps node1 to 10.1.2.77" in line and "; repair: " not in line
               for line in lines), lines
    # glibc's answer, by effect: before the block, gethostbyname answers the stale line first
    # (getaddrinfo sorts the subnet address first here, RFC 6724's longest matching prefix)
    stale_first = any(line.startswith("node2 hosts: 'node1' resolves to 10.1.2.77") and
                      "; repair: " not in line for line in lines)
    assert stale_first == (where == "before"), lines
    assert names_resolve_on_node2(bed) == (where == "after")
    assert run_printed(bed, *lines) == [
        "node2: sed -i '/^10\\.1\\.2\\.77 node1$/s/^/# /' /etc/hosts"]
    assert verify(bed, playbook, *keep)[0] == 0
    assert names_resolve_on_node2(bed)


def test_a_changed_hostname_is_listed_everywhere_and_resolves_to_its_node(
        clean: Cluster) -> None:
    bed, playbook = clean
    assert bed.exec("node2", "hostname", "gpu2").returncode == 0
    try:
        lines = drift_lines(bed, playbook)
        for node in ("node1", "node3"):  # the name torch now advertises resolves nowhere
            assert any(line.startswith(f"{node} hosts: plan: /etc/hosts: list 3 nodes")
                       for line in lines), lines
            assert any(line.startswith(f"{node} hosts: 'gpu2' resolves to nothing")
                       for line in lines), lines
        run_printed(bed, *lines)
        assert verify(bed, playbook)[0] == 0
        for node in ("node1", "node2", "node3"):
            assert first_address(bed, node, "gpu2") == subnet_address(bed, "node2")
    finally:
        assert bed.exec("node2", "hostname", "node2").returncode == 0
        applied(bed, playbook, "--tags", "hosts")


def test_cloud_init_managing_hosts_is_turned_off_and_a_later_file_said_by_hand(
        clean: Cluster) -> None:
    """Item 7: where cloud-init would render /etc/hosts from its template at every boot, the
    plan says so and its repair turns manage_etc_hosts off; a later file turning it on again
    wins over that drop-in, and is the user's to remove."""
    bed, playbook = clean
    assert bed.exec("node2", "sh", "-c", "mkdir -p /etc/cloud/cloud.cfg.d && "
                    "echo 'manage_etc_hosts: true' > /etc/cloud/cloud.cfg").returncode == 0
    try:
        lines = drift_lines(bed, playbook)
        assert lines[0].startswith("node2 hosts: plan: stop cloud-init rewriting /etc/hosts at "
                                   "boot (/etc/cloud/cloud.cfg sets manage_etc_hosts: True)"), lines
        run_printed(bed, *lines)
        assert verify(bed, playbook)[0] == 0
        later = "/etc/cloud/cloud.cfg.d/99_pve.cfg"
        assert bed.exec("node2", "sh", "-c", f"printf '# pve\\nmanage_etc_hosts: template\\n' > "
                        f"{later}").returncode == 0
        lines = drift_lines(bed, playbook)
        assert lines == [f"node2 hosts: by hand: {later}:2 'manage_etc_hosts: template' comes "
                         "after /etc/cloud/cloud.cfg.d/99-nodeprov.cfg, so it wins: cloud-init "
                         "will rewrite /etc/hosts at boot: comment it out: sed -i "
                         f"'/^manage_etc_hosts: template$/s/^/# /' {later}"]
        run_printed(bed, *lines)
        assert verify(bed, playbook)[0] == 0
        assert bed.exec("node2", "cat", "/etc/cloud/cloud.cfg.d/99-nodeprov.cfg").stdout.endswith(
            "manage_etc_hosts: false\n")
    finally:
        assert bed.exec("node2", "rm", "-rf", "/etc/cloud").returncode == 0


@pytest.fixture()
def site_dns(clean: Cluster) -> Iterator[Cluster]:
    """The site's DNS, serving mirror=10.9.9.9, on every node (a stand-in on 127.0.0.1)."""
    bed, _ = clean
    script = (Path(__file__).parent / "dns_stand_in.py").read_text()
    servers = [subprocess.Popen(bed.exec_argv(node, ["python3", "-c", script, "mirror=10.9.9.9"]),
                                stdout=subprocess.PIPE, text=True, env=NODE_ENV)
               for node in bed.nodes]
    pids = {}
    try:
        for node, server in zip(bed.nodes, servers, strict=True):
            assert server.stdout is not None
            said, _, pids[node] = server.stdout.readline().strip().partition(" ")
            assert said == "ready"
        assert first_address(bed, "node1", "mirror") == "10.9.9.9"
        yield clean
    finally:
        for node, pid in pids.items():  # nsenter forks: the server is its child in the node
            bed.exec(node, "kill", pid)
        for server in servers:
            server.kill()
            server.wait()
            if server.stdout is not None:
                server.stdout.close()


def test_a_hostname_the_sites_dns_gives_another_machine_takes_nothing_over(
        site_dns: Cluster) -> None:
    """#32 item 4, as the issue found it: after `hostname mirror` on node2, the site's mirror
    stays the site's on the other nodes; node2 lists it for itself and says so once; verify
    names the name torch would advertise and says by hand what to do."""
    bed, playbook = site_dns
    assert bed.exec("node2", "hostname", "mirror").returncode == 0
    try:
        lines = drift_lines(bed, playbook)
        assert any(line.startswith("node2 hosts: plan: /etc/hosts: list 3 nodes")
                   for line in lines), lines
        for node in ("node1", "node3"):
            assert any(line.startswith(f"{node} hosts: 'mirror' resolves to 10.9.9.9 "
                                       f"(expected 'mirror' {subnet_address(bed, 'node2')}): "
                                       "by hand: set node2's hostname to its inventory name "
                                       "(hostnamectl set-hostname node2 on it)")
                       for line in lines), lines
        run_printed(bed, *lines)  # node2's apply: mirror listed on node2 only
        for node in ("node1", "node3"):
            assert first_address(bed, node, "mirror") == "10.9.9.9"
        assert first_address(bed, "node2", "mirror") == subnet_address(bed, "node2")
        # the advice, run: hostnamectl needs systemd, which testbed nodes lack; `hostname`
        # sets the same kernel name
        assert bed.exec("node2", "hostname", "node2").returncode == 0
        run_printed(bed, *drift_lines(bed, playbook))  # node2's block drops mirror
        assert verify(bed, playbook)[0] == 0
        assert first_address(bed, "node2", "mirror") == "10.9.9.9"
    finally:
        assert bed.exec("node2", "hostname", "node2").returncode == 0
        applied(bed, playbook, "--tags", "hosts")
