"""The node's locks, and the keepalive watchdog that frees them when nodeprov goes away.

Every lock lives in ``LOCK_DIR``, root's own folder of mode 0700, checked before each use and
never followed through a symlink: in a world-writable folder (/run/lock) any user could make
root write through a planted symlink, block every run by holding the lock, or put escape codes
on the admin's terminal through the "held by" text. That text is shown cut short and escaped.

- The **run lock** (``RUN_LOCK``) is held by an apply for its whole run, by a holder script on
  an SSH channel of its own: two applies never interleave their edits on a node. The holder
  frees it when nodeprov closes the channel, or stops sending heartbeats (a connection dropped
  without sshd noticing).
- The **batch lock** (``LOCK_PATH``) is held by each batch of actions while it runs; the holder
  waits for it, so a run waits for a command a killed run left running on the node.

    lock = RunLock("node1")
    read = lock.take(transport, command, token, 600, password="", prompt=PROMPT, lost=lost)
    threading.Thread(target=keepalive, args=(transport, 5.0, 3, stop, lock.beat, drop)).start()
    lock.free()
"""

from __future__ import annotations

import fcntl
import socket
import struct
import termios
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from nodeprov.errors import CommandFailed, HostError
from nodeprov.remote.options import OUTPUT_LIMIT
from nodeprov.remote.sudo import START_WAIT, SudoGate, SudoRefused, refused
from nodeprov.util.validate import printable

STATE_DIR = "/var/lib/nodeprov"
LOCK_DIR = "/run/nodeprov"  # root's own, 0700
LOCK_PATH = f"{LOCK_DIR}/batch.lock"  # the batch lock
RUN_LOCK = f"{LOCK_DIR}/run.lock"  # says whose run holds it
# `ready_lock_dir DIR [FILE...]`: DIR made (0700) if missing, then it must be a folder of the
# user's own (root's), not a symlink, nor any FILE; shell builtins only, no program started.
LOCK_DIR_READY = r"""ready_lock_dir() {
  [ -d "$1" ] || mkdir -m 700 -- "$1" 2>/dev/null
  if [ -L "$1" ] || [ ! -d "$1" ] || [ ! -O "$1" ]; then
    echo "$1 is not a folder of root's own: remove it (nodeprov makes it)" >&2; return 1
  fi
  for file do
    [ ! -L "$file" ] || { echo "$file is a symlink: remove it" >&2; return 1; }
  done
}
"""
# Prints "started" (sudo let it run), then "held" or "busy: why" (the run lock, and no batch
# still running, within $wait s), then runs the read script given after it (the facts), fd 9
# closed and no stdin; held, it keeps the lock until the channel's EOF or $quiet s without a
# heartbeat byte. Programs are few on purpose: each costs the node ~1 ms per run.
_HOLDER_START = LOCK_DIR_READY + r"""dir=$1 lock=$2 wait=$3 quiet=$4 batches=$5; shift 5
echo started
ready_lock_dir "$dir" "$lock" "$batches" && chmod 700 -- "$dir" || exit 1
exec 9>>"$lock"
held=
if ! flock -w "$wait" 9; then
  echo "busy: another nodeprov run holds this node ($(head -c 200 -- "$lock"))"
# had and freed at once (closing fd 8): only waits for a batch that is running
elif ! { exec 8>>"$batches" && flock -w "$wait" 8; }; then
  echo "busy: a command of an interrupted nodeprov run still runs"
else
  echo "pid $$ since $(date -u +%FT%TZ) from ${SSH_CLIENT%% *}" > "$lock"; echo held; held=1
fi
exec 8>&-
[ -n "$held" ] || exec 9>&-
{
"""
_HOLDER_END = r"""
} 9>&- </dev/null
[ -n "$held" ] || exit 0
while beat=$(timeout "$quiet" head -c 1 9>&-) && [ -n "$beat" ]; do :; done
"""
# Runs argv under the batch lock (STATE_DIR made first: batches write there); -o: its fd must not
# leak into detached children (the firewall's revert guard).
_UNDER_BATCH_LOCK = LOCK_DIR_READY + r"""[ -d "$1" ] || mkdir -p -- "$1" || exit 1
ready_lock_dir "$2" "$3" || exit 1
lock=$3; shift 3
exec flock -o -w 600 "$lock" "$@"
"""


def holder_argv(read_script: str, token: str, wait: float, quiet: float) -> list[str]:
    """sh argv of the holder: the run lock within ``wait`` s, then ``read_script`` (a fixed
    script reading its token as $1) in the holder's own shell, saving a program start."""
    return ["sh", "-c", _HOLDER_START + read_script + _HOLDER_END, "nodeprov-facts", LOCK_DIR,
            RUN_LOCK, f"{wait:g}", f"{quiet:g}", LOCK_PATH, token]


def under_batch_lock(argv: Sequence[str]) -> list[str]:
    """``argv`` run under the batch lock, within 600 s."""
    return ["sh", "-c", _UNDER_BATCH_LOCK, "nodeprov-lock", STATE_DIR, LOCK_DIR, LOCK_PATH, *argv]


class RunLock:
    """The node's run lock, as held for a session by a holder on a channel of its own."""

    def __init__(self, host: str) -> None:
        self.host = host
        self._channel: Any = None

    @property
    def held(self) -> bool:
        return self._channel is not None

    def take(self, transport: Any, command: str, token: str, wait: float, *, password: str,
             prompt: str, lost: Callable[[], bool]) -> str:
        """Start the holder ``command`` (``holder_argv``, under sudo maybe) and return what its
        read script printed; the lock is then held until ``free``. Busy after ``wait`` s, it
        raises HostError naming the holder (``wait`` 0: no error, not held). Transport errors
        propagate; ``lost()`` ends the wait early (the connection was dropped)."""
        started, end = b"started\n", f"\n@@{token} end\n".encode()
        output, errors, gate = b"", b"", SudoGate(prompt, password)
        channel = transport.open_session()
        channel.exec_command(command)
        channel.settimeout(1.0)
        # a sudo that never starts the command (a refused password) is given up on
        sudo_deadline = time.monotonic() + START_WAIT
        ended = False
        while not ended and not lost() and (
                output.startswith(started) or time.monotonic() < sudo_deadline):
            while channel.recv_stderr_ready():
                errors += channel.recv_stderr(65536)
            # sudo's prompt, before the holder said it started: typed at once, and only then
            gate.started = output.startswith(started)
            try:
                typed = gate.reply(errors.decode("latin-1"))
            except SudoRefused:
                break  # it asks again: the password was refused
            if typed:
                channel.sendall(typed.encode())
            try:
                chunk = channel.recv(65536)
            except TimeoutError:
                continue
            if not chunk:
                break
            output += chunk
            ended = end in output[-len(chunk) - len(end):]  # not the whole output each time
            if max(len(output), len(errors)) > OUTPUT_LIMIT:
                channel.close()
                raise HostError(self.host, "facts", f"the facts printed over {OUTPUT_LIMIT} "
                                "characters, more than nodeprov reads from a node",
                                hint="is a file it reads that large?")
        if not ended:
            channel.close()
            if lost():
                raise ConnectionError("connection dropped")
            if gate.answered and not output.startswith(started):
                raise refused(self.host, "facts", "facts")
            stderr = errors.replace(prompt.encode(), b"").decode(errors="replace")
            raise CommandFailed(self.host, "facts", "sh facts.sh under the run lock",
                                channel.exit_status, stderr or output.decode(errors="replace"))
        state, _, read = output.decode(errors="replace").removeprefix("started\n").partition("\n")
        if state == "held":
            self._channel = channel
            channel.settimeout(None)
            return read
        channel.close()
        if wait:  # the holder's text is the node's: escaped, and cut short
            raise HostError(self.host, "lock", f"{printable(state.removeprefix('busy: '))[:300]}, "
                            f"after {wait:g} s", hint="wait for it to end, or stop it, and run "
                            "again")
        return read

    def beat(self) -> None:
        """One heartbeat to the holder (from the keepalive thread). A channel the node closed
        (its holder ended) is let go: the lock is no longer ``held``, and nothing raises."""
        channel = self._channel
        if channel is None:
            return
        try:
            if channel.send_ready():
                channel.send(b".")
        except OSError:  # paramiko's "Socket is closed": send_ready() is True once closed
            self._channel = None

    def free(self) -> None:
        """Free the lock: the holder reads EOF and ends."""
        if self._channel is not None:
            self._channel.close()
            self._channel = None


def keepalive(transport: Any, interval: float, count: int, stop: threading.Event,
              beat: Callable[[], None], silent: Callable[[str], None], *,
              clock: Callable[[], float] = time.monotonic) -> None:
    """Until ``stop``: every ``interval`` s a heartbeat (``beat``) and an SSH keepalive. A
    keepalive unanswered for ``count`` intervals calls ``silent(why)`` (which drops the
    connection, so the round trip in flight fails instead of hanging) and ends.

    The limit is about a node that stopped answering, not a busy machine: an interval this
    thread itself woke late for (the machine saturated) does not count, nor does one after which
    the node's reply waits unread in the socket. Ends quietly when the connection goes away.
    """
    pending: threading.Thread | None = None
    unanswered = 0
    woke = clock()
    while not stop.wait(interval):
        late = clock() - woke > 2 * interval
        woke = clock()
        beat()
        if pending is None or not pending.is_alive():
            pending = threading.Thread(target=_request, args=(transport,), daemon=True,
                                       name=f"{threading.current_thread().name} request")
            pending.start()
            unanswered = 0
        elif late or unread_bytes(transport):
            continue
        else:
            unanswered += 1
        if unanswered >= count and not stop.is_set():
            silent(f"the node answered no SSH keepalive for {interval * count:g} s")
            return


def _request(transport: Any) -> None:
    """One keepalive@openssh.com, waiting for its reply; returns at once on a closed
    transport. A thread of its own: paramiko's wait has no timeout."""
    try:
        transport.global_request("keepalive@openssh.com")
    except Exception:  # the connection went away (the round trip in flight says why)
        return


def unread_bytes(transport: Any) -> int:
    """Bytes the node sent that wait unread in the socket (0 when it is not a plain socket,
    as through a ProxyJump channel): a reply there means this machine is slow, not the node."""
    sock = getattr(transport, "sock", None)
    if not isinstance(sock, socket.socket):
        return 0
    try:
        waiting: int = struct.unpack("i", fcntl.ioctl(sock.fileno(), termios.FIONREAD,
                                                       b"\0" * 4))[0]
    except OSError:
        return 0
    return waiting
