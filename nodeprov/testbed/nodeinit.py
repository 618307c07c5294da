"""PID 1 of a testbed node: its own root and hostname, then ``exec sshd``.

Runs inside fresh mount, UTS, IPC and PID namespaces (made by ``unshare``) within the node's
network namespace, from a plan written by :mod:`nodeprov.testbed.boot`::

    nsenter --net=/run/netns/NS unshare --mount --uts --ipc --pid --fork --kill-child -- \\
        python3 -I -S nodeinit.py '{"hostname": "node1", "overlays": [...], "sshd": [...]}'

It prints its own and its parent's PID as the machine sees them, builds the node's tree in a
fresh tmpfs (``set_up_root``), pivots into it and lets the machine's tree go, prints ``ready``
and becomes sshd, which reaps orphans as a PID 1 must. Standard library only, and everything is
imported before the pivot hides this interpreter's own files.
"""

from __future__ import annotations

import ctypes
import json
import os
import socket
import sys
from typing import Any

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2

# /proc/sys outside net.* is the machine's own; a node may change only its network namespace.
READ_ONLY_PROC = ("/proc/sys", "/proc/sysrq-trigger")
WRITABLE_PROC = ("/proc/sys/net",)
CLEAN_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

_libc = ctypes.CDLL(None, use_errno=True)


def mount(source: str, target: str, fstype: str, flags: int = 0, options: str = "") -> None:
    """mount(2), raising OSError with the target named."""
    if _libc.mount(source.encode(), target.encode(), fstype.encode() if fstype else None,
                   ctypes.c_ulong(flags), options.encode() if options else None) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount {fstype or 'bind'} on {target} ({options}): "
                             f"{os.strerror(errno)}")


def bind(path: str, *, read_only: bool) -> None:
    """Bind ``path`` onto itself, then make that new mount read-only or read-write."""
    mount(path, path, "", MS_BIND | MS_REC)
    flags = MS_BIND | MS_REMOUNT | MS_NOSUID | MS_NODEV | MS_NOEXEC
    mount("none", path, "", flags | (MS_RDONLY if read_only else 0))


def set_up_root(plan: dict[str, Any]) -> None:
    """Build the node's whole tree in ``plan["root"]`` and make it the root: nothing of the
    machine's is left but what the plan names (system trees under overlays, shared folders
    read-only, /dev)."""
    mount("none", "/", "", MS_REC | MS_PRIVATE)  # nothing below may ever reach the machine
    root = plan["root"]
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=755")
    build_tree(root, plan)
    os.chdir(root)
    # pivot_root(".", "."): the machine's tree ends stacked on the node's, and is let go
    if _libc.pivot_root(b".", b".") != 0 or _libc.umount2(b".", MNT_DETACH) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"pivot_root to {root}: {os.strerror(errno)}")
    os.chdir("/")
    for path in READ_ONLY_PROC:
        if os.path.exists(path):  # sysrq-trigger exists only with CONFIG_MAGIC_SYSRQ
            bind(path, read_only=True)
    for path in WRITABLE_PROC:
        bind(path, read_only=False)


def build_tree(root: str, plan: dict[str, Any]) -> None:
    """The node's tree under ``root``, made from this machine's before the pivot."""
    for name, target in plan["links"].items():
        os.symlink(target, root + name)
    for layer in plan["overlays"]:
        os.makedirs(root + layer["target"])
        # redirect_dir lets a node rename a directory that exists only below; volatile skips
        # syncing the upper layer, which a throwaway node does not need (teardown was slow)
        mount("overlay", root + layer["target"], "overlay", 0,
              f"lowerdir={layer['lower']},upperdir={layer['upper']},workdir={layer['work']},"
              "redirect_dir=on,index=off,metacopy=off,volatile")
    for target, source in plan["private"].items():
        os.makedirs(root + target)
        mount(source, root + target, "", MS_BIND)
    for tree in ("/tmp", "/run", "/proc", "/sys", "/dev"):
        os.makedirs(root + tree, exist_ok=True)
    mount("tmpfs", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    mount("tmpfs", root + "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=755")
    os.mkdir(root + "/run/sshd", 0o755)
    os.mkdir(root + "/run/lock")
    os.chmod(root + "/run/lock", 0o1777)  # as Debian has it; mkdir's mode passes the umask
    mount("/dev", root + "/dev", "", MS_BIND | MS_REC)  # devices (a GPU test's too)
    mount("tmpfs", root + "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    mount("proc", root + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    # A sysfs mounted from inside the network namespace lists only the node's own interfaces.
    mount("sysfs", root + "/sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for path in plan["shared"]:  # read-only, without the mounts below it
        os.makedirs(root + path, exist_ok=True)
        mount(path, root + path, "", MS_BIND)
        mount("none", root + path, "", MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def parent_pid(status: str) -> str:
    """The ``PPid:`` of a /proc/PID/status text."""
    return next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:"))


def main(argv: list[str]) -> None:
    plan: dict[str, Any] = json.loads(argv[1])
    # Still the machine's /proc: these are the PIDs of this process and of the `unshare` that
    # waits on it as the machine sees them, which `testbed down` kills and `exec` enters.
    with open("/proc/self/status") as status:
        print(os.readlink("/proc/self"), parent_pid(status.read()), flush=True)
    set_up_root(plan)
    socket.sethostname(plan["hostname"])
    os.chdir("/root")  # what `nodeprov testbed exec` starts in (nsenter --wd)
    print("ready", flush=True)
    os.dup2(2, 1)
    os.execve(plan["sshd"][0], plan["sshd"], {"PATH": CLEAN_PATH, "LANG": "C.UTF-8"})


if __name__ == "__main__":
    main(sys.argv)
