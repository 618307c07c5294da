"""PID 1 of a testbed node: private mounts and hostname, then ``exec sshd``.

Runs inside fresh mount, UTS, IPC and PID namespaces (made by ``unshare``) within the node's
network namespace, from a plan written by :mod:`nodeprov.testbed.boot`::

    nsenter --net=/run/netns/NS unshare --mount --uts --ipc --pid --fork --kill-child -- \\
        python3 -I -S nodeinit.py '{"hostname": "node1", "overlays": [...], "sshd": [...]}'

It prints its own and its parent's PID as the machine sees them, then ``ready`` once every mount
is in place, and becomes sshd, which reaps orphans as a PID 1 must. Standard library only, and
everything is imported before the mounts hide this interpreter's own files (it may live under
/root).
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import socket
import sys
from errno import EINVAL, ENOENT
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
# Trees the node mounts its own filesystems on, besides its overlays.
FRESH_TREES = ("/tmp", "/dev/shm", "/run", "/proc", "/sys")

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


def mount_points(mountinfo: str) -> list[str]:
    """The mount points listed in a /proc/PID/mountinfo text (octal escapes decoded)."""
    return [re.sub(r"\\([0-7]{3})", lambda code: chr(int(code[1], 8)), line.split()[4])
            for line in mountinfo.splitlines()]


def detach_below(trees: list[str]) -> None:
    """Unmount, in this namespace only, every mount below ``trees``, deepest first.

    The node's own mounts would hide them anyway; detaching keeps the node's mount table honest
    (no bind-mounted /etc/hosts of the machine's) and drops the references its copies hold, such
    as /run/netns/NAME mounts that keep other testbeds' network namespaces alive.
    """
    with open("/proc/self/mountinfo") as mountinfo:
        points = set(mount_points(mountinfo.read()))
    below = [point for point in points if any(point.startswith(tree + "/") for tree in trees)]
    for point in sorted(below, key=lambda point: point.count("/"), reverse=True):
        if _libc.umount2(point.encode(), MNT_DETACH) != 0:
            errno = ctypes.get_errno()
            if errno not in (EINVAL, ENOENT):  # already gone with a mount above it
                raise OSError(errno, f"umount {point}: {os.strerror(errno)}")


def set_up_mounts(plan: dict[str, Any]) -> None:
    """Everything the node sees privately; ``plan`` comes from ``boot.init_plan``."""
    mount("none", "/", "", MS_REC | MS_PRIVATE)  # nothing below may ever reach the machine
    detach_below([layer["target"] for layer in plan["overlays"]] + list(FRESH_TREES))
    # redirect_dir lets a node rename a directory that exists only below; volatile skips syncing
    # the upper layer, which a throwaway node does not need and which made teardown slow.
    for layer in plan["overlays"]:
        mount("overlay", layer["target"], "overlay", 0,
              f"lowerdir={layer['lower']},upperdir={layer['upper']},workdir={layer['work']},"
              "redirect_dir=on,index=off,metacopy=off,volatile")
    mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")
    mount("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=755")
    os.mkdir("/run/sshd", 0o755)
    os.mkdir("/run/lock")
    os.chmod("/run/lock", 0o1777)  # mkdir's mode would pass through the umask
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for path in READ_ONLY_PROC:
        if os.path.exists(path):  # sysrq-trigger exists only with CONFIG_MAGIC_SYSRQ
            bind(path, read_only=True)
    for path in WRITABLE_PROC:
        bind(path, read_only=False)
    # A sysfs mounted from inside the network namespace lists only the node's own interfaces.
    mount("sysfs", "/sys", "sysfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)


def parent_pid(status: str) -> str:
    """The ``PPid:`` of a /proc/PID/status text."""
    return next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:"))


def main(argv: list[str]) -> None:
    plan: dict[str, Any] = json.loads(argv[1])
    # Still the machine's /proc: these are the PIDs of this process and of the `unshare` that
    # waits on it as the machine sees them, which `testbed down` kills and `exec` enters.
    with open("/proc/self/status") as status:
        print(os.readlink("/proc/self"), parent_pid(status.read()), flush=True)
    set_up_mounts(plan)
    socket.sethostname(plan["hostname"])
    os.chdir("/")
    print("ready", flush=True)
    os.dup2(2, 1)
    os.execve(plan["sshd"][0], plan["sshd"], {"PATH": CLEAN_PATH, "LANG": "C.UTF-8"})


if __name__ == "__main__":
    main(sys.argv)
