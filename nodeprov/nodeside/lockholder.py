"""Who holds the node's job lock (``@nodeprov-job``, see launcher.py), as the kernel says:
anyone may bind the name, so what the holder says of itself is shown only as its claim.

nodeprov runs this file's text with the node's python3 (standard library, 3.8+), as the job's
user, when the launcher found the lock held (exit 75); it prints one line::

    python3 -I -c LOCKHOLDER
    pid 4242 of alice (uid 1001): python3 -I -c <15426 characters> start ...; it says: "run ..."

The holder is SO_PEERCRED's pid, else (the launcher that listened has ended, or the name is
bound and not listened on) the process holding the socket (/proc/net/unix, /proc/PID/fd: this
user's processes, or every one for root); its uid and user from /proc/PID/status, its command
line from /proc/PID/cmdline, long words as their length.
"""

from __future__ import annotations

import json
import os
import pwd
import socket
import struct
import sys

LOCK_NAME = b"\0nodeprov-job"  # launcher.LOCK_NAME


def holder() -> str:
    """Who holds the job lock: the process the kernel names (SO_PEERCRED, else the holder of
    the socket in /proc), then what it says of itself, quoted: anyone may bind the name, so
    its words are only its claim."""
    asking = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    asking.settimeout(3)
    pid, said = 0, b""
    try:
        asking.connect(LOCK_NAME)
        pid = struct.unpack("3i", asking.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                    struct.calcsize("3i")))[0]
        said = asking.recv(400)
    except OSError:
        pass  # bound, not listening, or silent: the kernel still knows who holds it
    finally:
        asking.close()
    if not os.path.isdir(f"/proc/{pid}"):  # 0, or the launcher that listened has ended
        pid = lock_holder_pid()
    claim = shown(said.decode(errors="replace"), 300)
    return (process(pid) if pid else "a process this user cannot see") + (
        f'; it says: "{claim}"' if claim else
        "; it does not answer: a job whose launcher ended, or not a nodeprov launcher")


def shown(text: str, most: int) -> str:
    """``text`` cut to ``most`` characters, escaped as a JSON string is (quotes, control and
    non-ASCII characters: no escape sequence or bidirectional mark reaches a terminal)."""
    return json.dumps(text[:most])[1:-1]


def lock_holder_pid() -> int:
    """A process holding the job lock's socket (0: none this user may see)."""
    inodes = set()
    with open("/proc/net/unix") as table:  # Num RefCount Protocol Flags Type St Inode Path
        for line in table:
            fields = line.split()
            if len(fields) >= 8 and fields[7] == "@" + LOCK_NAME[1:].decode():
                inodes.add(f"socket:[{fields[6]}]")
    for pid in sorted(filter(str.isdigit, os.listdir("/proc")), key=int):
        try:
            descriptors = os.listdir(f"/proc/{pid}/fd")
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") in inodes for fd in descriptors):
                return int(pid)
        except OSError:
            continue  # gone, or another user's
    return 0


def process(pid: int) -> str:
    """A process as the kernel describes it: pid, user, command line (long words cut)."""
    try:
        with open(f"/proc/{pid}/status") as status:
            uid = int(next(line.split()[2] for line in status if line.startswith("Uid:")))
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            words = cmdline.read(1 << 20).decode(errors="replace").split("\0")
    except (OSError, StopIteration, ValueError):
        return f"pid {pid}, gone"
    try:
        user = pwd.getpwuid(uid).pw_name
    except KeyError:
        user = "?"
    command = " ".join(word if len(word) <= 60 else f"<{len(word)} characters>"
                       for word in words if word)
    return f"pid {pid} of {shown(user, 32)} (uid {uid}): {shown(command, 200)}"


if __name__ == "__main__":
    print(holder())
    sys.exit(0)
