"""One SSH connection per host, reused for every round trip; the only place commands run.

    session = Session(host, SshOptions())
    facts, observed = session.gather([probe_a, probe_b])   # one round trip
    session.execute("hosts", [Write("/etc/hosts", text)])   # one round trip

Commands are argv lists joined by ``shlex.join``; inventory values reach the node as quoted data.
A node that stops answering SSH keepalives (rebooting, frozen, cut off) fails its round trip
within seconds (``SshOptions.keepalive_*``) instead of hanging it. ``gather(lock_wait=600)``
(apply) reads under the node's run lock and holds it until ``unlock``: two applies never
interleave their edits on a node, and one waits for commands a killed run left running there.
With become, the password is typed at sudo's prompt, never put on a command line.
"""

from __future__ import annotations

import io
import re
import secrets
import shlex
import socket
import subprocess
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nodeprov.errors import CommandFailed, HostError, Unreachable
from nodeprov.facts import FACTS_SCRIPT, Facts, parse_facts, split_sections
from nodeprov.inventory import Host
from nodeprov.tasks.base import Action, ConfirmNewConnection, Local, Probe, Run, Upload, Write

STATE_DIR = "/var/lib/nodeprov"
LOCK_PATH = f"{STATE_DIR}/lock"  # held by each batch of actions, by flock, while it runs
RUN_LOCK = "/run/lock/nodeprov.lock"  # held by an apply's session; says whose run holds it
SUDO_SECONDS = 30.0  # for sudo to check the password (PAM, LDAP) and start the command
SUDO_PROMPT = "[nodeprov: sudo password]"
SUDO_REFUSED = "Sorry, try again."
# Prints "started" (sudo let it run), then "held" or "busy: why" (the run lock, and no batch
# of a killed run still running, within $wait s), then runs the facts; held, it keeps the lock
# until nodeprov closes the channel or stops sending heartbeats (a dropped connection that sshd
# has not noticed).
_HOLD_RUN_LOCK = r"""lock=$1 wait=$2 quiet=$3 batches=$4; shift 4
echo started
mkdir -p -- "${lock%/*}" "${batches%/*}" && exec 9>>"$lock" || exit 1
if ! flock -w "$wait" 9; then
  echo "busy: another nodeprov run holds this node ($(cat -- "$lock"))"; exec "$@" 9>&-
elif ! flock -w "$wait" "$batches" true 9>&-; then
  echo "busy: a command of an interrupted nodeprov run still runs"; exec "$@" 9>&-
fi
echo "pid $$ since $(date -u +%FT%TZ) from ${SSH_CLIENT%% *}" > "$lock"
echo held
"$@" 9>&- </dev/null
while beat=$(timeout "$quiet" head -c 1 9>&-) && [ -n "$beat" ]; do :; done
"""
# Runs a task's actions as one script: markers on stderr tell which action failed.
_ACTIONS_PRELUDE = r"""set -e
token=$1; shift
step() { printf '\n@@%s step %s\n' "$token" "$1" >&2; }
nodeprov_write() {
  dir=$(dirname -- "$1"); mkdir -p -- "$dir"
  tmp=$(mktemp "$dir/.nodeprov.XXXXXX")
  printf %s "$2" > "$tmp"
  if [ -e "$1" ]; then chown --reference="$1" -- "$tmp"; chmod --reference="$1" -- "$tmp"
  else chmod "$3" -- "$tmp"; fi
  sync -- "$tmp" 2>/dev/null || true
  # rename is atomic; a bind-mounted target (containers' /etc/hosts) refuses it: write in place
  if ! mv -f -- "$tmp" "$1" 2>/dev/null; then cat -- "$tmp" > "$1"; rm -f -- "$tmp"; fi
}
"""


@dataclass(frozen=True)
class SshOptions:
    accept_new_host_keys: bool = False
    connect_timeout: float = 10.0
    command_timeout: float = 1800.0
    # like OpenSSH's ServerAliveInterval and ServerAliveCountMax
    keepalive_interval: float = 5.0
    keepalive_count_max: int = 3
    lock_timeout: float = 600.0  # how long an apply waits for another one on the same node


@dataclass(frozen=True)
class Result:
    stdout: str
    stderr: str
    exit_code: int


class Session:
    """An SSH session to ``host`` that counts its connections and round trips."""

    def __init__(self, host: Host, options: SshOptions) -> None:
        self.host = host
        self.options = options
        self.connections = 0
        self.round_trips = 0
        self._connection: Any = None
        self._holder: Any = None  # the channel holding the run lock
        self._lost: str | None = None  # why the connection was dropped under a round trip
        self._closed = threading.Event()

    # --- connection -----------------------------------------------------------------------------
    def open(self) -> None:
        from nodeprov.hostkeys import connect  # lazy: Fabric is slow to import

        try:
            self._connection = connect(self.host, self.options)
        except HostError:
            raise
        except Exception as error:  # paramiko/socket raise many kinds; all mean unreachable
            raise Unreachable(self.host.name, "", f"cannot connect to {self.host.address}:"
                              f"{self.host.port}: {_describe(error)}",
                              hint="is sshd running and the address right?") from None
        self.connections += 1
        self._closed = threading.Event()
        threading.Thread(target=self._watch, args=(self._connection.transport,), daemon=True,
                         name=f"keepalive {self.host.name}").start()

    def unlock(self) -> None:
        """Free the node's run lock (the node's holder reads EOF), if this session holds it."""
        if self._holder is not None:
            self._holder.close()
            self._holder = None

    def close(self) -> None:
        self._closed.set()
        self.unlock()
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def disconnect(self, why: str) -> None:
        """Drop the connection now, from any thread: the round trip in flight fails saying
        ``why``; its command goes on on the node, and the node's locks make the next run wait."""
        self._lost = why
        if self._connection is not None:
            self._connection.close()

    def _watch(self, transport: Any) -> None:
        """Send a keepalive every interval; when one goes unanswered for ``count_max``
        intervals, close the connection, so the round trip in flight fails instead of hanging.
        Also feeds the run lock's heartbeat."""
        interval, count = self.options.keepalive_interval, self.options.keepalive_count_max
        while not self._closed.wait(interval):
            holder = self._holder
            if holder is not None and holder.send_ready():
                holder.send(b".")
            reply = threading.Thread(target=transport.global_request, daemon=True,
                                     args=("keepalive@openssh.com",))
            reply.start()
            reply.join(interval * count)
            if reply.is_alive() and not self._closed.is_set():
                self.disconnect(f"the node answered no SSH keepalive for {interval * count:g} s")
                return

    def __enter__(self) -> Session:
        self.open()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- round trips ----------------------------------------------------------------------------
    def run(self, argv: Sequence[str], *, stdin: str | None = None, task: str = "",
            timeout: float | None = None, what: str = "") -> Result:
        """Run argv (with sudo when the host says become) and return its output, any exit;
        ``what`` names it in errors (default: argv)."""
        what = what or _short(argv)
        self.round_trips += 1
        try:
            result = self._connection.run(
                shlex.join(self._as_root(argv)), hide=True, warn=True,
                timeout=timeout or self.options.command_timeout,
                in_stream=io.StringIO(stdin) if stdin is not None else False,
                watchers=self._sudo_responders(),
            )
        except Exception as error:
            if type(getattr(error, "reason", None)).__name__ == "ResponseNotAccepted":
                raise HostError(self.host.name, task, f"sudo refused the password ({what})",
                                hint="is ansible_become_password right?") from None
            raise self._broken(task, what, _describe(error)) from None
        if self._lost:
            raise self._broken(task, what, "")
        return Result(result.stdout, result.stderr.replace(SUDO_PROMPT, ""), result.exited)

    def _as_root(self, argv: Sequence[str]) -> list[str]:
        """argv under sudo when the host says become: the password is typed at sudo's prompt
        only, so a sudo that asks for none never passes it on to the command."""
        if not self.host.become:
            return list(argv)
        if self.host.become_password:
            return ["sudo", "-S", "-p", SUDO_PROMPT, "--", *argv]
        return ["sudo", "-n", "--", *argv]

    def _sudo_responders(self) -> list[Any]:
        from invoke.watchers import FailingResponder  # lazy, like Fabric

        password = self.host.become_password
        return [FailingResponder(re.escape(SUDO_PROMPT), password + "\n", SUDO_REFUSED)] if (
            self.host.become and password) else []

    def _broken(self, task: str, what: str, cause: str) -> HostError:
        if self._lost:
            return HostError(self.host.name, task, f"connection lost during {what}: "
                             f"{self._lost}", hint="did the node reboot, freeze or drop off "
                             "the network?")
        return HostError(self.host.name, task, f"connection failed during {what}: {cause}",
                         hint="did the node reboot or the network drop?")

    @property
    def locked(self) -> bool:
        return self._holder is not None

    def gather(self, probes: Sequence[Probe | None], *,
               lock_wait: float | None = None) -> tuple[Facts, list[str]]:
        """Facts and every probe's output, in one round trip. With ``lock_wait``, read under
        the node's run lock, had within that many seconds and then held until ``unlock``
        (``locked`` says if it was had; with 0, a busy lock is no error)."""
        token = secrets.token_hex(8)
        script = [FACTS_SCRIPT]
        for index, probe in enumerate(probes):
            if probe is not None:
                script.append(f"section probe.{index}\n{shlex.join(probe.argv)} || true\n")
        script.append("section end\n")
        argv = ["sh", "-c", "".join(script), "nodeprov-facts", token]
        result = (self.run(argv, task="facts", what="facts") if lock_wait is None
                  else self._hold_run_lock(argv, token, lock_wait))
        if result.exit_code != 0:
            raise CommandFailed(self.host.name, "facts", "sh facts.sh", result.exit_code,
                                result.stderr or result.stdout)
        sections = split_sections(result.stdout, token)
        try:
            facts = parse_facts(sections)
        except (ValueError, KeyError) as error:
            raise HostError(self.host.name, "facts", f"cannot read the node's facts: {error}",
                            hint="is this a Linux node with iproute2?") from None
        observed = [sections.get(f"probe.{index}", "") for index in range(len(probes))]
        return facts, observed

    def _hold_run_lock(self, argv: Sequence[str], token: str, wait: float) -> Result:
        """Run the facts ``argv`` under the run lock, in a channel left open to hold it."""
        quiet = self.options.keepalive_interval * self.options.keepalive_count_max * 2
        command = self._as_root(["sh", "-c", _HOLD_RUN_LOCK, "nodeprov-lock", RUN_LOCK,
                                 f"{wait:g}", f"{quiet:g}", LOCK_PATH, *argv])
        self.round_trips += 1
        started, end, output, errors = b"started\n", f"\n@@{token} end\n".encode(), b"", b""
        prompt, answered = SUDO_PROMPT.encode(), 0
        try:
            channel = self._connection.transport.open_session()
            channel.exec_command(shlex.join(command))
            channel.settimeout(1.0)
            # a sudo that never starts the command (a refused password) is given up on
            sudo_deadline = time.monotonic() + SUDO_SECONDS
            while end not in output and not self._lost and (
                    output.startswith(started) or time.monotonic() < sudo_deadline):
                while channel.recv_stderr_ready():
                    errors += channel.recv_stderr(65536)
                if errors.count(prompt) > answered:
                    if answered or not self.host.become_password:
                        break  # it asks again: the password was refused
                    channel.sendall(self.host.become_password.encode() + b"\n")
                    answered += 1
                try:
                    chunk = channel.recv(65536)
                except TimeoutError:
                    continue
                if not chunk:
                    break
                output += chunk
        except Exception as error:
            raise self._broken("facts", "facts", _describe(error)) from None
        if end not in output:
            if self._lost:
                raise self._broken("facts", "facts", "")
            channel.close()
            if answered and not output.startswith(started):
                raise HostError(self.host.name, "facts", "sudo refused the password (facts)",
                                hint="is ansible_become_password right?")
            stderr = errors.replace(prompt, b"").decode(errors="replace")
            raise CommandFailed(self.host.name, "facts", "sh facts.sh under the run lock",
                                channel.exit_status, stderr or output.decode(errors="replace"))
        state, _, facts = output.decode(errors="replace").removeprefix("started\n").partition("\n")
        if state == "held":
            self._holder = channel
            channel.settimeout(None)
            return Result(facts, "", 0)
        channel.close()
        if wait:
            raise HostError(self.host.name, "lock", f"{state.removeprefix('busy: ')}, after "
                            f"{wait:g} s", hint="wait for it to end, or stop it, and run again")
        return Result(facts, "", 0)

    def execute(self, task: str, actions: Sequence[Action]) -> None:
        """Run a task's actions: consecutive commands and writes in one locked round trip."""
        batch: list[Run | Write] = []
        for action in actions:
            if isinstance(action, Write) or (isinstance(action, Run) and action.stdin is None):
                batch.append(action)
                continue
            self._run_batch(task, batch)
            batch = []
            if isinstance(action, Upload):
                self._upload(task, action)
            elif isinstance(action, Local):
                self._run_local(task, action)
            elif isinstance(action, ConfirmNewConnection):
                self._confirm_new_connection(task, action)
            elif isinstance(action, Run):
                self._run_batch(task, [action])
        self._run_batch(task, batch)

    def _run_batch(self, task: str, batch: Sequence[Run | Write]) -> None:
        if not batch:
            return
        token = secrets.token_hex(8)
        lines = [_ACTIONS_PRELUDE]
        for index, action in enumerate(batch):
            if isinstance(action, Write):
                command = shlex.join(["nodeprov_write", action.path, action.content,
                                      format(action.mode, "o")])
            else:
                command = shlex.join(action.argv)
            lines.append(f"step {index}\n{command}\n")
        stdin = next((a.stdin for a in batch if isinstance(a, Run) and a.stdin), None)
        # -o: the lock fd must not leak into detached children (the firewall's revert guard)
        argv = ["flock", "-o", "-w", "600", LOCK_PATH,
                "sh", "-c", "".join(lines), "nodeprov", token]
        result = self.run(["sh", "-c", 'mkdir -p "$1" && shift && exec "$@"', "nodeprov-lock",
                           STATE_DIR, *argv],
                          stdin=stdin, task=task, what=_short(list(map(str, batch))))
        if result.exit_code != 0:
            failed, output = _failed_step(result.stderr, token)
            action = batch[failed] if failed is not None else batch[0]
            raise CommandFailed(self.host.name, task, str(action), result.exit_code,
                                (result.stdout + output).strip())

    def _upload(self, task: str, action: Upload) -> None:
        local = Path(action.local_path)
        pairs = [(local, action.remote_path)]
        if local.is_dir():
            pairs = [(path, f"{action.remote_path}/{path.name}") for path in sorted(local.iterdir())
                     if path.is_file() and not path.name.startswith(".")]
        self.round_trips += 1
        try:
            for source, remote in pairs:
                self._connection.put(str(source), remote)
        except (OSError, EOFError) as error:
            raise HostError(self.host.name, task, f"upload to {action.remote_path} failed: "
                            f"{_describe(error)}") from None

    def _run_local(self, task: str, action: Local) -> None:
        try:
            result = subprocess.run(action.argv, capture_output=True, text=True, check=False,
                                    timeout=self.options.command_timeout)
        except (OSError, subprocess.TimeoutExpired) as error:
            raise HostError(self.host.name, task, f"{action} failed: {_describe(error)}") from None
        if result.returncode != 0:
            raise CommandFailed(self.host.name, task, str(action), result.returncode,
                                result.stderr or result.stdout,
                                hint="this ran on this machine, not on the node")

    def _confirm_new_connection(self, task: str, action: ConfirmNewConnection) -> None:
        probe = Session(self.host, self.options)
        try:
            with probe:
                if probe.run(["true"], task=task, timeout=20).exit_code != 0:
                    raise HostError(self.host.name, task, "a new SSH session could not run "
                                    "commands")
        except HostError as error:
            raise HostError(self.host.name, task, f"a NEW SSH connection failed after "
                            f"{action.why}: {error.message}",
                            hint="the node reverts the change by itself") from None
        finally:
            self.connections += probe.connections
            self.round_trips += probe.round_trips


def _failed_step(stderr: str, token: str) -> tuple[int | None, str]:
    marker = f"\n@@{token} step "
    if marker not in stderr:
        return None, stderr
    last = stderr.rsplit(marker, 1)[1]
    number, _, output = last.partition("\n")
    return int(number), output


def _short(argv: Sequence[str]) -> str:
    text = " ".join(argv)
    return text if len(text) < 60 else text[:57] + "..."


def _describe(error: BaseException) -> str:
    if isinstance(error, socket.timeout):
        return "timed out"
    return str(error) or type(error).__name__



def connect_all(hosts: Sequence[Host], options: SshOptions, forks: int = 32
                ) -> tuple[dict[str, Session], dict[str, Facts], dict[str, str]]:
    """Open a session to every host in parallel and read its facts: (open sessions, facts,
    one-line errors of the hosts that failed). The caller closes the sessions."""
    sessions = {host.name: Session(host, options) for host in hosts}

    def open_and_read(session: Session) -> Facts | str:
        try:
            session.open()
            return session.gather([])[0]
        except HostError as error:
            return str(error)

    with ThreadPoolExecutor(max_workers=max(1, forks)) as pool:
        read = dict(zip(sessions, pool.map(open_and_read, sessions.values()), strict=True))
    facts = {name: found for name, found in read.items() if isinstance(found, Facts)}
    errors = {name: found for name, found in read.items() if isinstance(found, str)}
    return sessions, facts, errors
