"""Wheels are fetched once, on the local test cluster: one node gets the wheelhouse upload (or
downloads the wheels itself, with download_once), the others fetch from it over the node subnet,
through the firewall nodeprov sets."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from nodeprov.remote.session import Session
from nodeprov.tasks.base import Upload
from nodeprov.testbed.cluster import Testbed
from tests.conftest import MakeTestbed
from tests.tasks.torch.test_torch import apply, mirror, torch_on

# the firewall first: the seed's port must be one its rules open to the node subnet
PLAYBOOK = """\
- name: torch from the wheelhouse, behind the firewall
  hosts: all
  tasks:
    - name: Firewall
      firewall: {subnet: "{{ node_subnet }}", rdzv_port: "{{ rdzv_port }}",
                 ssh_port: "{{ ansible_port }}", ssh_allow_from: "{{ ssh_allow_from }}"}
    - name: Python venv
      venv: {path: "{{ venv_path }}", python_version: "{{ python_version }}",
             index_url: "{{ pip_index_url }}", extra_index_urls: "{{ pip_extra_index_url }}",
             find_links: "{{ pip_find_links }}", subnet: "{{ node_subnet }}"}
    - name: torch
      torch:
        venv: "{{ venv_path }}"
        version: "{{ torch_version }}"
        cuda: "{{ torch_cuda }}"
        index_url: "{{ pip_index_url }}"
        extra_index_urls: "{{ pip_extra_index_url }}"
        find_links: "{{ pip_find_links }}"
        wheelhouse: "{{ wheelhouse }}"
        download_once: "{{ download_once }}"
        subnet: "{{ node_subnet }}"
"""


@pytest.fixture
def uploads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, Upload]]]:
    """Every Upload the sessions make: (host, action)."""
    made: list[tuple[str, Upload]] = []
    real = Session._upload

    def counted(self: Session, task: str, action: Upload) -> None:
        made.append((self.host.name, action))
        real(self, task, action)

    monkeypatch.setattr(Session, "_upload", counted)
    yield made


def megabytes(out: str, words: str) -> list[float]:
    """The amounts of the log lines that end a transfer: ``| {words} NNN.N MB in``."""
    units = {"kB": 1e-3, "MB": 1.0, "GB": 1e3}
    return [float(number) * units[unit]
            for number, unit in re.findall(rf"\| {words} ([\d.]+) (kB|MB|GB) in ", out)]


def listening(cluster: Testbed, node: str) -> set[str]:
    """The node's listening TCP sockets (address:port)."""
    return {line.split()[3] for line in cluster.exec(node, "ss", "-Hltn").stdout.splitlines()}


@pytest.mark.integration
def test_one_copy_leaves_this_machine_and_every_node_installs(
        make_testbed: MakeTestbed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        uploads: list[tuple[str, Upload]]) -> None:
    cluster = make_testbed(nodes=3)
    for node in cluster.nodes:  # the nodes see no wheel anywhere: only what is sent
        for folder in ("/opt/wheels", "/opt/pypi", "/opt/pypi-more"):
            assert cluster.exec(node, "mount", "-t", "tmpfs", "none", folder).returncode == 0
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    inventory = yaml.safe_load(cluster.inventory_path.read_text())
    inventory["all"]["vars"].update(mirror(), wheelhouse=True)
    (tmp_path / "inventory.yaml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "site.yaml").write_text(PLAYBOOK)
    args = [str(tmp_path / "inventory.yaml"), "-p", str(tmp_path / "site.yaml")]
    before = {node: listening(cluster, node) for node in cluster.nodes}

    code, out = apply(*args, "--check", "--diff")
    assert code == 0 and out.count(", uploaded from this machine) with uv") == 1, out
    assert out.count(" over the node subnet) with uv") == 2, out
    started = time.monotonic()
    code, out = apply(*args)
    seconds = time.monotonic() - started
    assert code == 0 and "3 hosts, 9 tasks changed, 0 hosts failed" in out, out
    (wheel_dir,) = (tmp_path / "cache" / "nodeprov" / "wheelhouse" / "cpu").glob("torch-*")
    wheel_uploads = [(host, a) for host, a in uploads if a.local_path == str(wheel_dir)]
    assert len(wheel_uploads) == 1, wheel_uploads  # one copy, to the seed
    # the others' fetches counted on the node as they went: each wrote the seed's copy
    (sent,) = megabytes(out, r"torch: torch-\S+ \| sent")
    assert megabytes(out, r"torch: fetch the wheels from a node \| wrote") == [sent, sent], out
    for node in cluster.nodes:
        assert torch_on(cluster, node) == "2.13.0+cpu"
        assert cluster.exec(node, "ls", "-A", "/var/cache/nodeprov/wheelhouse").stdout == ""
        assert cluster.exec(node, "ufw", "status").stdout.startswith("Status: active")
    for _ in range(50):  # the seed's server is told to stop at the end of the run
        if all(listening(cluster, node) == before[node] for node in cluster.nodes):
            break
        time.sleep(0.1)
    assert {node: listening(cluster, node) for node in cluster.nodes} == before
    del uploads[:]
    assert "0 tasks changed, 0 hosts failed PASS: " in apply(*args)[1]
    assert "0 tasks would change, 0 hosts failed PASS: " in apply(*args, "--check")[1]
    assert uploads == []
    print(f"wheelhouse to 3 nodes through one seed, install included: {seconds:.0f}s")


@pytest.mark.integration
def test_download_once_one_node_downloads_and_the_others_reach_no_index(
        make_testbed: MakeTestbed, tmp_path: Path, uploads: list[tuple[str, Upload]]) -> None:
    cluster = make_testbed(nodes=3)
    for node in cluster.nodes[1:]:  # only node1, the seed, reaches the index (the mirror)
        for folder in ("/opt/wheels", "/opt/pypi", "/opt/pypi-more"):
            assert cluster.exec(node, "mount", "-t", "tmpfs", "none", folder).returncode == 0
    inventory = yaml.safe_load(cluster.inventory_path.read_text())
    inventory["all"]["vars"].update(mirror(), download_once=True)
    (tmp_path / "inventory.yaml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "site.yaml").write_text(PLAYBOOK)
    # one host at a time: node1 plans first, so it is the seed, and serves before node2 asks
    args = [str(tmp_path / "inventory.yaml"), "-p", str(tmp_path / "site.yaml"), "--forks", "1"]
    before = {node: listening(cluster, node) for node in cluster.nodes}

    code, out = apply(*args)
    assert code == 0 and "3 hosts, 9 tasks changed, 0 hosts failed" in out, out
    assert out.count("(downloaded by the node itself, for the other nodes too) with uv") == 1
    assert out.count("(downloaded once by node1, fetched over the node subnet) with uv") == 2
    assert "after all" not in out, out  # no node fell back to its own download
    assert not [a for _, a in uploads if "wheelhouse" in a.remote_path]  # nothing sent from here
    # what the seed downloaded and the others fetched, counted on the nodes as it went
    (downloaded,) = megabytes(out, r"torch: download the wheels \| wrote")
    fetched = megabytes(out, r"torch: fetch the wheels from a node \| wrote")
    assert len(fetched) == 2 and downloaded > 100, out
    assert all(abs(amount - downloaded) <= 0.2 for amount in fetched), (downloaded, fetched)
    for node in cluster.nodes:
        assert torch_on(cluster, node) == "2.13.0+cpu"
        assert cluster.exec(node, "ls", "-A", "/var/cache/nodeprov/wheelhouse").stdout == ""
    for _ in range(50):
        if all(listening(cluster, node) == before[node] for node in cluster.nodes):
            break
        time.sleep(0.1)
    assert {node: listening(cluster, node) for node in cluster.nodes} == before
    assert "0 tasks changed, 0 hosts failed PASS: " in apply(*args)[1]
