"""How long the wheelhouse and uv take to reach every node, and how many bytes leave this machine.

    python -m tests.bench.distribution --nodes 1,4,32 --rate 100mbit [--upload-each 8]
        [--apply 1,8] [--download-once 8]

For each size: a fresh testbed, this machine's link to the nodes throttled with tc (tbf on the
bridge device's egress, in the root namespace: what this machine sends to the nodes passes it,
what the bridge forwards between nodes does not), then the distribution phase as the venv and
torch tasks run it (peer_exec.execute of uv's PeerUpload and the wheels' on every node at once,
until every node holds both), timed, with the bytes the bridge device sent (tx_bytes) over one
copy (wheels + uv). Each size runs it twice, side by side on the same nodes: uv sent to each
node as before (a plain upload per node; the wheels from the peers), then uv like the wheels
(one upload, then the peers). ``--upload-each`` also runs it with every file uploaded to each
node; ``--apply`` times a whole `nodeprov apply` (venv + torch from the wheelhouse, installs
included) at those sizes, reported apart. ``--download-once`` serves the same wheels over HTTP
from this machine (the index behind the throttled link, as the internet is behind a site's
uplink) and times every node downloading its own copy, then ``download_once`` (one node
downloads what this machine resolved, ``peers.PeerDownload``, the others fetch its copy,
checked against this machine's hashes). The tc qdisc is removed on every exit. Needs root.
Prints the machine's load average before and after each size.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
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
from nodeprov.testbed.cluster import Testbed
from nodeprov.testbed.lifecycle import temporary
from nodeprov.wheels import installer, wheelhouse
from nodeprov.wheels.peer_exec import execute
from nodeprov.wheels.peers import (
    Distribution,
    PeerDownload,
    PeerUpload,
    plan_copy,
    plan_download,
)
from nodeprov.wheels.resolve import Pinned
from nodeprov.wheels.thismachine import ThisMachine, WheelSet, wheels_in
from tests.mirrors import LOCAL_MIRRORS
from tests.wheels.mirror import uv_index

REMOTE = "/var/cache/nodeprov/wheelhouse/bench-torch-2.13.0"
UV_REMOTE = "/var/cache/nodeprov/bench-uv.upload"
SOURCES = ("--find-links", "/opt/wheels", "--index-url", "file:///opt/pypi/simple")
PLAYBOOK = """\
- name: venv and torch from the wheelhouse
  hosts: all
  tasks:
    - name: Python venv
      venv: {path: /opt/bench/venv, index_url: "file:///opt/pypi/simple",
             find_links: [/opt/wheels], extra_index_urls: ["{{ uv_index }}"],
             subnet: "{{ node_subnet }}"}
    - name: torch
      torch: {venv: /opt/bench/venv, version: 2.13.0, cuda: cpu, wheelhouse: true,
              find_links: [/opt/wheels], index_url: "file:///opt/pypi/simple",
              extra_index_urls: ["{{ uv_index }}"], subnet: "{{ node_subnet }}"}
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


def uv_folder(cache: Path) -> Path:
    """A folder holding uv's wheel only, as this machine's uv download leaves it."""
    folder = cache / "uv"
    if not folder.exists():
        folder.mkdir()
        (wheel,) = Path(uv_index().removeprefix("file://")).parent.glob("files/uv-*.whl")
        shutil.copy(wheel, folder / wheel.name)
    return folder


def size_of(folder: Path) -> int:
    return sum(path.stat().st_size for path in wheels_in(str(folder)))


def on_every_node(cluster: Testbed, distribution: Distribution,
                  actions: Callable[[Context], list[Action]]) -> tuple[float, dict[str, float]]:
    """Every node runs its ``actions`` (made from its Context) at once, through
    ``peer_exec.execute`` with one Distribution: wall seconds, and each node's seconds. A node
    that fell back from its peers fails the run; the folders are removed."""
    inventory = load_inventory(cluster.inventory_path)
    sessions, facts, errors = connect_all(inventory.hosts, SshOptions(), forks=64)
    assert not errors, errors
    cluster_view = {h.name: (h, facts[h.name]) for h in inventory.hosts}
    done: dict[str, float] = {}
    try:
        started = time.monotonic()

        def one(name: str) -> None:
            session = sessions[name]
            ctx = Context(session.host, facts[name], cluster_view, {Distribution: distribution})
            execute(session, distribution, "bench", actions(ctx))
            done[name] = time.monotonic() - started

        threads = [threading.Thread(target=one, args=(name,)) for name in sessions]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.monotonic() - started
        fell_back = {name: distribution.warnings_for(name) for name in sessions}
        assert not any(fell_back.values()), fell_back
        distribution.close()
        for name, session in sessions.items():
            session.run(["rm", "-rf", "--", REMOTE, UV_REMOTE])
            assert name in done, f"{name} failed"
    finally:
        for session in sessions.values():
            session.close()
    return wall, done


def distribute(cluster: Testbed, wheels: Path, uv: Path | None, peers: bool, uv_peers: bool
               ) -> tuple[float, dict[str, float]]:
    """Every node gets ``wheels`` (and ``uv``) at once, each from the peers or uploaded: wall
    seconds, and each node's seconds."""
    distribution = Distribution()

    def copies(ctx: Context) -> list[Action]:
        def copy(local: Path, remote: str, from_peers: bool) -> PeerUpload:
            return plan_copy(distribution, ctx.host.name, ctx.facts,
                             cluster.subnet if from_peers else None,
                             PeerUpload(str(local), remote, key=str(local)))[0]
        wanted: list[Action] = [copy(uv, UV_REMOTE, uv_peers)] if uv else []
        return [*wanted, copy(wheels, REMOTE, peers)]

    return on_every_node(cluster, distribution, copies)


# argv: the folder, the index URL, the wheel names (up to the first option, which is pip's);
# what pip download does, minus the resolve
CURL = ('cd -- "$1" && base=$2 && shift 2 && for name; do case $name in -*) break;; esac; '
        'curl -sSfO -- "$base$name"; done')


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


class Resolved(ThisMachine):
    """This machine, having resolved the wheels ``local`` holds (the bench's index)."""

    def __init__(self, local: Path) -> None:
        super().__init__()
        self.local = local

    def pins(self, wanted: WheelSet) -> tuple[Pinned, ...]:
        return tuple(Pinned(path.name.split("-")[0], path.name.split("-")[1], path.name,
                            hashlib.sha256(path.read_bytes()).hexdigest())
                     for path in wheels_in(str(self.local)))


def download(cluster: Testbed, url: str, local: Path, once: bool
             ) -> tuple[float, dict[str, float]]:
    """Every node downloads ``local``'s wheels from ``url`` into REMOTE at once (``once``: one
    node does, the others fetch its copy): wall seconds, and each node's seconds."""
    names = [path.name for path in wheels_in(str(local))]
    # curl standing in for pip download; with the seed's pins, the names are still these
    argv = ("sh", "-c", CURL, "download", REMOTE, url, *names, "--")
    distribution = Distribution(here=Resolved(local))
    mkdir = Run(("sh", "-c", installer.MAKE_UPLOAD_DIR, "nodeprov-mkdir", REMOTE))
    count = Run(("sh", "-c", f'[ "$(ls -- "$1" | wc -l)" -eq {len(names)} ]', "count", REMOTE))
    return on_every_node(cluster, distribution, lambda ctx: [
        mkdir, plan_download(distribution, ctx.host.name, ctx.facts,
                             cluster.subnet if once else None,
                             PeerDownload(argv, key="bench", remote_path=REMOTE,
                                          wanted=WheelSet((), tuple(names))))[0], count])


def measure_download(nodes: int, rate: str, cache: Path) -> None:
    """Each node downloading from the index, then download_once, behind the same link."""
    with temporary(nodes=nodes, shared=LOCAL_MIRRORS) as cluster:
        local = fill_wheelhouse(cluster, cache)
        size = size_of(local)
        with index(local, cluster.state.bridge_address.split("/")[0]) as url, \
                throttled(cluster.state.bridge, rate):
            for once in (False, True):
                how = "download_once" if once else "each node downloads"
                before = tx_bytes(cluster.state.bridge)
                wall, done = download(cluster, url, local, once)
                sent = tx_bytes(cluster.state.bridge) - before
                print(f"{nodes} nodes, {how}, index behind {rate}: every node holds the "
                      f"{size / 1e6:.1f} MB in {wall:.1f}s (first {min(done.values()):.1f}s); "
                      f"from the index {sent / 1e6:.1f} MB = {sent / size:.2f}x one copy; "
                      f"{load()}", flush=True)


def apply_wall(cluster: Testbed, work: Path) -> float:
    inventory = yaml.safe_load(cluster.inventory_path.read_text())
    (work / "inventory.yaml").write_text(yaml.safe_dump(inventory))
    (work / "site.yaml").write_text(PLAYBOOK.replace("{{ uv_index }}", uv_index()))
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
    """The distribution at ``nodes``: uv to each node, then uv like the wheels, side by side
    (``upload_each``: everything to each node); the wall time of the latter."""
    with temporary(nodes=nodes, shared=LOCAL_MIRRORS) as cluster:
        wheels, uv = fill_wheelhouse(cluster, cache), uv_folder(cache)
        size = size_of(wheels) + size_of(uv)
        print(f"{nodes} nodes, {rate}: wheelhouse {size_of(wheels) / 1e6:.1f} MB + uv "
              f"{size_of(uv) / 1e6:.1f} MB = one copy {size / 1e6:.1f} MB; {load()}",
              flush=True)
        ways = ([("everything uploaded to each node", False, False)] if upload_each else
                [("uv to each node (before)", True, False), ("uv like the wheels (now)", True,
                                                             True)])
        for how, peers, uv_peers in ways:
            with throttled(cluster.state.bridge, rate):
                before = tx_bytes(cluster.state.bridge)
                wall, done = distribute(cluster, wheels, uv, peers, uv_peers)
                sent = tx_bytes(cluster.state.bridge) - before
            first, last = min(done.values()), max(done.values())
            print(f"  {how}: {wall:.1f}s (first node done {first:.1f}s, last {last:.1f}s); "
                  f"sent by this machine {sent / 1e6:.1f} MB = {sent / size:.2f}x one copy "
                  f"(wheels + uv); {load()}", flush=True)
        if with_apply:
            with throttled(cluster.state.bridge, rate), tempfile.TemporaryDirectory() as work:
                seconds = apply_wall(cluster, Path(work))
            print(f"  nodeprov apply (venv + distribution + torch install): {seconds:.1f}s; "
                  f"{load()}", flush=True)
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="1,4,32")
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
