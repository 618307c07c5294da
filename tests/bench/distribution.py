"""How long the wheelhouse takes to reach every node, and how many bytes leave this machine.

    python -m tests.bench.distribution --nodes 1,8,32 --rate 100mbit [--upload-each 8]
        [--apply 1,8] [--download-once 8]

For each size: a fresh testbed, this machine's link to the nodes throttled with tc (tbf on the
bridge device's egress, in the root namespace: what this machine sends to the nodes passes it,
what the bridge forwards between nodes does not), then the distribution phase as the torch task
runs it (peer_exec.execute of the mkdir and the PeerUpload on every node at once, until every
node holds the wheels), timed, with the bytes the bridge device sent (tx_bytes) over the
wheelhouse's size. ``--upload-each`` runs the same with the old way (one SFTP upload per node)
for comparison; ``--apply`` times a whole `nodeprov apply` (venv + torch from the wheelhouse,
installs included) at those sizes, reported apart. ``--download-once`` serves the same
wheels over HTTP from this machine (the index behind the throttled link, as the internet is
behind a site's uplink) and times every node downloading its own copy, then
``download_once`` (one node downloads, ``peers.PeerDownload``, the others fetch its copy).
The tc qdisc is removed on every exit. Needs root. Prints the machine's load average before and
after each size.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import yaml

from nodeprov.inventory import load_inventory
from nodeprov.remote.connect import connect_all
from nodeprov.remote.options import SshOptions
from nodeprov.tasks.base import Action, Context, Run
from nodeprov.tasks.torch.install import peer_download, peer_upload
from nodeprov.testbed.cluster import Testbed
from nodeprov.testbed.lifecycle import temporary
from nodeprov.wheels import installer, wheelhouse
from nodeprov.wheels.peer_exec import execute
from nodeprov.wheels.peers import Distribution

REMOTE = "/var/cache/nodeprov/wheelhouse/bench-torch-2.13.0"
SOURCES = ("--find-links", "/opt/wheels", "--index-url", "file:///opt/pypi/simple")
PLAYBOOK = """\
- name: venv and torch from the wheelhouse
  hosts: all
  tasks:
    - name: Python venv
      venv: {path: /opt/bench/venv}
    - name: torch
      torch: {venv: /opt/bench/venv, version: 2.13.0, cuda: cpu, wheelhouse: true,
              find_links: [/opt/wheels], index_url: "file:///opt/pypi/simple",
              subnet: "{{ node_subnet }}"}
"""


@contextmanager
def throttled(device: str, rate: str) -> Iterator[None]:
    """tbf on ``device``'s egress for the block, removed on any exit."""
    subprocess.run(["tc", "qdisc", "add", "dev", device, "root", "tbf", "rate", rate,
                    "burst", "256kb", "latency", "100ms"], check=True)
    try:
        yield
    finally:
        subprocess.run(["tc", "qdisc", "del", "dev", device, "root"], check=False)


def tx_bytes(device: str) -> int:
    return int(Path(f"/sys/class/net/{device}/statistics/tx_bytes").read_text())


def fill_wheelhouse(cluster: Testbed, cache: Path) -> Path:
    """This machine's wheelhouse for the nodes' python and glibc (from the local mirrors)."""
    node = cluster.nodes[0]
    python = cluster.exec(node, "python3", "-c", "import sys; print('%d.%d' % sys.version_info"
                                                 "[:2])", check=True).stdout.strip()
    glibc = cluster.exec(node, "getconf", "GNU_LIBC_VERSION", check=True).stdout.split()[-1]
    major, minor = map(int, glibc.split("."))
    dest = cache / f"torch-2.13.0-cp{python.replace('.', '')}"
    wheelhouse.fetch(dest, wheelhouse.download_args(python, (major, minor), "x86_64", SOURCES,
                                                    ["torch==2.13.0+cpu"]))
    return dest


def on_every_node(cluster: Testbed, peers: bool,
                  actions: Callable[[Context], list[Action]]) -> tuple[float, dict[str, float]]:
    """Every node runs its ``actions`` (made from its Context) at once, through
    ``peer_exec.execute`` with one Distribution (``peers``) or none: wall seconds, and each
    node's seconds. A node that fell back from its peers fails the run; REMOTE is removed."""
    inventory = load_inventory(cluster.inventory_path)
    sessions, facts, errors = connect_all(inventory.hosts, SshOptions(), forks=64)
    assert not errors, errors
    distribution = Distribution() if peers else None
    cluster_view = {h.name: (h, facts[h.name]) for h in inventory.hosts}
    done: dict[str, float] = {}
    try:
        started = time.monotonic()

        def one(name: str) -> None:
            session = sessions[name]
            ctx = Context(session.host, facts[name], cluster_view, distribution)
            execute(session, distribution, "bench", actions(ctx))
            done[name] = time.monotonic() - started

        threads = [threading.Thread(target=one, args=(name,)) for name in sessions]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.monotonic() - started
        if distribution is not None:
            fell_back = {name: distribution.warnings_for(name) for name in sessions}
            assert not any(fell_back.values()), fell_back
            distribution.close()
        for name, session in sessions.items():
            session.run(["rm", "-rf", "--", REMOTE])
            assert name in done, f"{name} failed"
    finally:
        for session in sessions.values():
            session.close()
    return wall, done


MKDIR = Run(("sh", "-c", installer.MAKE_UPLOAD_DIR, "nodeprov-mkdir", REMOTE))


def distribute(cluster: Testbed, local: Path, peers: bool) -> tuple[float, dict[str, float]]:
    """Every node gets ``local`` into REMOTE at once: wall seconds, and each node's seconds."""
    return on_every_node(cluster, peers, lambda ctx: [
        MKDIR, peer_upload(ctx, str(local), REMOTE, "bench", cluster.subnet)[0]])


# argv: the folder, the index URL, the wheel names; what pip download does, minus the resolve
CURL = 'cd -- "$1" && base=$2 && shift 2 && for name; do curl -sSfO -- "$base$name"; done'


@contextmanager
def index(local: Path, address: str) -> Iterator[str]:
    """``local`` served over HTTP on ``address`` for the block: its base URL."""
    server = subprocess.Popen([sys.executable, "-u", "-m", "http.server", "--bind", address,
                               "--directory", str(local), "0"], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    try:
        assert server.stdout is not None
        port = server.stdout.readline().split(" port ")[1].split()[0]
        yield f"http://{address}:{port}/"
    finally:
        server.terminate()
        server.wait()


def download(cluster: Testbed, url: str, names: list[str], once: bool
             ) -> tuple[float, dict[str, float]]:
    """Every node downloads ``names`` from ``url`` into REMOTE at once (``once``: one node
    does, the others fetch its copy): wall seconds, and each node's seconds."""
    fetch = Run(("sh", "-c", CURL, "download", REMOTE, url, *names))
    return on_every_node(cluster, once, lambda ctx: [
        MKDIR, peer_download(ctx, fetch, REMOTE, cluster.subnet)[0],
        Run(("sh", "-c", f'[ "$(ls -- "$1" | wc -l)" -eq {len(names)} ]', "count", REMOTE))])


def measure_download(nodes: int, rate: str, cache: Path) -> None:
    """Each node downloading from the index, then download_once, behind the same link."""
    with temporary(nodes=nodes) as cluster:
        local = fill_wheelhouse(cluster, cache)
        names = sorted(p.name for p in local.iterdir() if not p.name.startswith("."))
        size = sum((local / name).stat().st_size for name in names)
        with index(local, cluster.state.bridge_address.split("/")[0]) as url, \
                throttled(cluster.state.bridge, rate):
            for once in (False, True):
                how = "download_once" if once else "each node downloads"
                before = tx_bytes(cluster.state.bridge)
                wall, done = download(cluster, url, names, once)
                sent = tx_bytes(cluster.state.bridge) - before
                print(f"{nodes} nodes, {how}, index behind {rate}: every node holds the "
                      f"{size / 1e6:.1f} MB in {wall:.1f}s (first {min(done.values()):.1f}s); "
                      f"from the index {sent / 1e6:.1f} MB = {sent / size:.2f}x one copy; "
                      f"{load()}", flush=True)


def apply_wall(cluster: Testbed, work: Path) -> float:
    inventory = yaml.safe_load(cluster.inventory_path.read_text())
    (work / "inventory.yaml").write_text(yaml.safe_dump(inventory))
    (work / "site.yaml").write_text(PLAYBOOK)
    program = Path(sys.executable).with_name("nodeprov")
    started = time.monotonic()
    subprocess.run([str(program), "apply", str(work / "inventory.yaml"), "-p",
                    str(work / "site.yaml")], check=True, stdout=subprocess.DEVNULL,
                   env={**os.environ, "XDG_CACHE_HOME": str(work / "cache")})
    return time.monotonic() - started


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def measure(nodes: int, rate: str, cache: Path, upload_each: bool, with_apply: bool
            ) -> float:
    with temporary(nodes=nodes) as cluster:
        local = fill_wheelhouse(cluster, cache)
        size = sum(p.stat().st_size for p in local.iterdir() if not p.name.startswith("."))
        how = "upload to each node" if upload_each else "one upload, peers fetch"
        print(f"{nodes} nodes, {how}, {rate}: wheelhouse {size / 1e6:.1f} MB; {load()}",
              flush=True)
        with throttled(cluster.state.bridge, rate):
            before = tx_bytes(cluster.state.bridge)
            wall, done = distribute(cluster, local, peers=not upload_each)
            sent = tx_bytes(cluster.state.bridge) - before
        first, last = min(done.values()), max(done.values())
        print(f"  distribution {wall:.1f}s (first node done {first:.1f}s, last {last:.1f}s); "
              f"sent by this machine {sent / 1e6:.1f} MB = {sent / size:.2f}x one copy; "
              f"{load()}", flush=True)
        if nodes > 1 and not upload_each:
            print(f"  this machine -> seed {size / first / 1e6:.1f} MB/s; nodes -> "
                  f"{nodes - 1} peers {size * (nodes - 1) / max(last - first, 1e-3) / 1e6:.1f}"
                  " MB/s together (the bridge forwards them past the tbf)", flush=True)
        if with_apply:
            with throttled(cluster.state.bridge, rate), tempfile.TemporaryDirectory() as work:
                seconds = apply_wall(cluster, Path(work))
            print(f"  nodeprov apply (venv + distribution + torch install): {seconds:.1f}s; "
                  f"{load()}", flush=True)
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="1,8,32")
    parser.add_argument("--rate", default="100mbit")
    parser.add_argument("--upload-each", default="", help="sizes to also run the old way")
    parser.add_argument("--apply", default="", help="sizes to also time a whole apply at")
    parser.add_argument("--download-once", default="",
                        help="sizes to time each node's download against download_once at")
    options = parser.parse_args()
    if options.download_once:
        with tempfile.TemporaryDirectory() as cache:
            for nodes in (int(n) for n in options.download_once.split(",")):
                measure_download(nodes, options.rate, Path(cache))
        if not options.nodes:
            return
    sizes = [int(n) for n in options.nodes.split(",")]
    old = {int(n) for n in options.upload_each.split(",") if n}
    applies = {int(n) for n in options.apply.split(",") if n}
    walls: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as cache:
        for nodes in sizes:
            walls[nodes] = measure(nodes, options.rate, Path(cache), False, nodes in applies)
            if nodes in old:
                measure(nodes, options.rate, Path(cache), True, False)
    if 1 in walls:
        for nodes in sizes[1:]:
            print(f"distribution {nodes} nodes / 1 node: {walls[nodes] / walls[1]:.2f}x")


if __name__ == "__main__":
    main()
