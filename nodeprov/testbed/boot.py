"""Booting a node: its private files prepared on the machine, its PID 1 started in namespaces.

    prepare(node_dir, "node1", "10.77.3.2", client_public_key, host_key)
    pipes = {member.name: launch(member, node_dir, sshd="/usr/sbin/sshd", shared=())}
    await_started(pipes, {member.name: member}, log_of=..., timeout=30)  # fills member.init

A node's namespaces are made by ``unshare`` in the node's network namespace, its mounts by
:mod:`nodeprov.testbed.nodeinit`, which then becomes the node's sshd.

A node sees nothing writable of this machine's: its root is a fresh tree holding the system
trees (/usr, /etc, /var, and /bin, /lib... or their links) under private writable layers, its
own empty /opt, /home, /srv, /mnt and /media, fresh /tmp, /run, /proc and /sys, the machine's
/dev, and the folders a test shares (``shared``) read-only at the same path. A rehearsal on the
testbed then fails where a real cluster would: nothing written to /srv on one node shows on
another, and ``--sync`` finds nothing already there.
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from nodeprov.errors import NodeprovError
from nodeprov.testbed.processes import ProcessId
from nodeprov.testbed.sshfiles import sshd_config
from nodeprov.testbed.state import Member

# Mount point -> the tree the node sees below its private writable layer. /root starts as a copy
# of /etc/skel: the machine's own /root puts pyenv's shims first in PATH.
OVERLAYS = {"/etc": "/etc", "/var": "/var", "/usr": "/usr", "/root": "/etc/skel"}
# The machine's links to /usr (merged /usr) are made again; where one is a folder, an overlay.
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
PRIVATE = ("/opt", "/home", "/srv", "/mnt", "/media")  # each node's own, empty at first
SSHD_DIR = "/etc/ssh/nodeprov-testbed"  # in the node: its sshd's config and host key
NODEINIT = Path(__file__).with_name("nodeinit.py")
RESOLV_CONF = ("# written by `nodeprov testbed up`: nothing listens here, so every lookup fails\n"
               "# at once and no query leaves the node\n"
               "nameserver 127.0.0.1\noptions timeout:1 attempts:1\n")


def hosts_file(hostname: str) -> str:
    """Debian's stock /etc/hosts, ``127.0.1.1`` line included (nodeprov must comment it out)."""
    return (f"127.0.0.1\tlocalhost\n127.0.1.1\t{hostname}\n\n"
            "# The following lines are desirable for IPv6 capable hosts\n"
            "::1     localhost ip6-localhost ip6-loopback\n"
            "ff02::1 ip6-allnodes\nff02::2 ip6-allrouters\n")


def upper_dir(node_dir: Path, target: str) -> Path:
    return node_dir / "upper" / target.strip("/")


def system_trees() -> tuple[dict[str, str], dict[str, str]]:
    """(link -> its target, mount point -> lower tree) of the system trees a node sees."""
    links = {name: os.readlink(name) for name in SYSTEM_LINKS if os.path.islink(name)}
    folders = {name: name for name in SYSTEM_LINKS
               if name not in links and os.path.isdir(name)}
    return links, {**OVERLAYS, **folders}


def prepare(node_dir: Path, hostname: str, address: str, authorized_key: str,
            host_key: Path, sshd_settings: Mapping[str, str] | None = None) -> None:
    """Make the node's writable layers, seeded with its own identity files and sshd config
    (``sshd_settings`` override the testbed's, e.g. ``{"MaxStartups": "2:100:2"}``)."""
    for target in system_trees()[1]:
        upper_dir(node_dir, target).mkdir(parents=True)
        (node_dir / "work" / target.strip("/")).mkdir(parents=True)
    for target in PRIVATE:
        (node_dir / "private" / target.strip("/")).mkdir(parents=True)
    (node_dir / "root").mkdir()
    etc = upper_dir(node_dir, "/etc")
    (etc / "hosts").write_text(hosts_file(hostname))
    (etc / "hostname").write_text(hostname + "\n")
    (etc / "resolv.conf").write_text(RESOLV_CONF)
    root = upper_dir(node_dir, "/root")
    root.chmod(0o700)
    (root / ".ssh").mkdir(mode=0o700)
    keys = root / ".ssh" / "authorized_keys"
    keys.write_text(authorized_key)
    keys.chmod(0o600)
    sshd_dir = etc / SSHD_DIR.removeprefix("/etc/")  # inside the node: it sees no testbed dir
    sshd_dir.mkdir(parents=True, mode=0o700)
    (sshd_dir / host_key.name).write_bytes(host_key.read_bytes())
    (sshd_dir / host_key.name).chmod(0o600)
    (sshd_dir / "sshd_config").write_text(
        sshd_config(address, Path(SSHD_DIR, host_key.name), sshd_settings))


def init_plan(node_dir: Path, hostname: str, sshd: str, shared: Sequence[str] = ()
              ) -> dict[str, Any]:
    """What :mod:`nodeinit` mounts and runs, as JSON-ready data."""
    links, overlays = system_trees()
    return {
        "hostname": hostname,
        "root": str(node_dir / "root"),
        "links": links,
        "overlays": [{"target": target, "lower": lower, "upper": str(upper_dir(node_dir, target)),
                      "work": str(node_dir / "work" / target.strip("/"))}
                     for target, lower in overlays.items()],
        "private": {target: str(node_dir / "private" / target.strip("/")) for target in PRIVATE},
        "shared": list(shared),
        "sshd": [sshd, "-D", "-e", "-f", f"{SSHD_DIR}/sshd_config"],
    }


def log_path(node_dir: Path) -> Path:
    return node_dir / "node.log"


def launch(member: Member, node_dir: Path, sshd: str, marker: str,
           shared: Sequence[str] = ()) -> IO[bytes]:
    """Start the node detached from us (its own session) and return the pipe it reports on;
    its launcher carries ``marker`` (``Names.marker``) in its environment, by which `down` and
    `exec` know it."""
    argv = ["setsid", "--fork", "nsenter", f"--net=/run/netns/{member.netns}",
            "unshare", "--mount", "--uts", "--ipc", "--pid", "--fork", "--kill-child", "--",
            sys.executable, "-I", "-S", str(NODEINIT),
            json.dumps(init_plan(node_dir, member.name, sshd, shared))]
    name, _, value = marker.partition("=")
    with log_path(node_dir).open("ab") as log:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                   stderr=log, env={**os.environ, name: value})
    # `setsid --fork` returns at once; the node lives on without us as its parent.
    if process.wait() != 0:
        if process.stdout:
            process.stdout.close()
        raise NodeprovError(f"{member.name}: testbed: {' '.join(argv[:3])} exited "
                            f"{process.returncode}")
    assert process.stdout is not None  # stdout=PIPE
    return process.stdout


def _report(member: Member, line: str) -> None:
    """Apply one line the node's init printed: its PIDs, then ``ready``."""
    if line == "ready":
        return
    init_pid, launcher_pid = (int(word) for word in line.split())
    member.init, member.launcher = ProcessId.of(init_pid), ProcessId.of(launcher_pid)


def await_started(pipes: Mapping[str, IO[bytes]], members: Mapping[str, Member],
                  log_of: Callable[[str], Path], timeout: float) -> None:
    """Wait until every node's init reports ``ready``, recording PIDs in ``members`` as they come.

    Waits for all even after one fails, so that every started node's PIDs are known for cleanup.
    Closes every pipe; raises NodeprovError naming the nodes that failed, with their logs' tails.
    """
    selector = selectors.DefaultSelector()
    buffers = dict.fromkeys(pipes, b"")
    for name, pipe in pipes.items():
        selector.register(pipe, selectors.EVENT_READ, name)
    failures: dict[str, str] = {}
    ready: set[str] = set()
    deadline = time.monotonic() + timeout
    try:
        while selector.get_map() and time.monotonic() < deadline:
            for key, _ in selector.select(deadline - time.monotonic()):
                name = key.data
                chunk = os.read(key.fd, 4096)
                *lines, buffers[name] = (buffers[name] + chunk).split(b"\n")
                for line in lines:
                    _report(members[name], line.decode())
                if b"ready" in lines:
                    ready.add(name)
                elif chunk:
                    continue
                else:
                    failures[name] = "exited"
                selector.unregister(key.fileobj)
    finally:
        selector.close()
        for pipe in pipes.values():
            pipe.close()
    failures.update({name: f"not ready after {timeout:.0f} s" for name in pipes
                     if name not in ready and name not in failures})
    if failures:
        raise NodeprovError("; ".join(_describe_failure(name, log_of(name), what)
                                      for name, what in sorted(failures.items())[:3]))


def _describe_failure(name: str, log: Path, what: str) -> str:
    try:
        tail = " ".join(log.read_text(errors="replace").strip().splitlines()[-3:])[-400:]
    except OSError:
        tail = ""
    return f"{name}: testbed: node init {what}: {tail or 'no output'} (log: {log})"
