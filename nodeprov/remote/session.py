"""One SSH connection per host, reused for every round trip; the only place commands run.

    session = Session(host, SshOptions())
    facts, observed = session.gather([probe_a, probe_b])   # one round trip
    session.execute("hosts", [Write("/etc/hosts", text)])   # one round trip
    read = session.execute("hosts", actions, then_read=[None, probe_b])  # (facts, observed)

Commands are argv lists joined by ``shlex.join``; inventory values reach the node as quoted data.
A node that stops answering SSH keepalives (rebooting, frozen, cut off) fails its round trip
within seconds (``SshOptions.keepalive_*``) instead of hanging it. ``gather(lock_wait=600)``
(apply) reads under the node's run lock and holds it until ``unlock``: two applies never
interleave their edits on a node, and one waits for commands a killed run left running there.
With become, the password is typed at sudo's prompt, never put on a command line.
"""

from __future__ import annotations

import dataclasses
import io
import re
import secrets
import shlex
import socket
import subprocess
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from nodeprov.errors import CommandFailed, HostError, Unreachable
from nodeprov.inventory import Host
from nodeprov.remote.facts import Facts, parse_facts, read_script, split_sections
from nodeprov.remote.nodelock import (
    LOCK_PATH,
    RUN_LOCK,
    STATE_DIR,
    RunLock,
    holder_argv,
    keepalive,
    under_batch_lock,
)
from nodeprov.tasks.base import Action, ConfirmNewConnection, Local, Probe, Run, Upload, Write

if TYPE_CHECKING:
    from nodeprov.remote.hostkeys import SshFiles

__all__ = ["LOCK_PATH", "RUN_LOCK", "STATE_DIR", "Result", "Session", "SshOptions",
           "connect_all"]

SUDO_PROMPT = "[nodeprov: sudo password]"
SUDO_REFUSED = "Sorry, try again."
# Runs a task's actions as one script: markers on stderr tell which action failed. With a read
# script after them, it prints the facts and probes as they are after the actions.
_ACTIONS_PRELUDE = r"""set -e
token=$1
step() { printf '\n@@%s step %s\n' "$token" "$1" >&2; }
nodeprov_write() {
  dir=$(dirname -- "$1"); mkdir -p -- "$dir"
  tmp=$(mktemp "$dir/.nodeprov.XXXXXX")
  # a large content comes staged in file $4 (a command line holds 128 KiB at most)
  if [ -n "${4-}" ]; then cat -- "$4" > "$tmp" || { rm -f -- "$tmp" "$4"; exit 1; }; rm -f -- "$4"
  # dash's printf says "I/O error" for any failure: again through cat, to say which
  elif ! printf %s "$2" 2>/dev/null > "$tmp"; then
    printf %s "$2" | cat > "$tmp" || { rm -f -- "$tmp"; exit 1; }; fi
  if [ -e "$1" ]; then chown --reference="$1" -- "$tmp"; chmod --reference="$1" -- "$tmp"
  else chmod "$3" -- "$tmp"; fi
  sync -- "$tmp" 2>/dev/null || true
  # rename is atomic; a bind-mounted target (containers' /etc/hosts) refuses it: write in place
  if ! mv -f -- "$tmp" "$1" 2>/dev/null; then cat -- "$tmp" > "$1"; rm -f -- "$tmp"; fi
}
"""


# Contents past this many bytes in one batch are staged by SFTP: the batch script is one
# argument of the remote shell, and Linux takes at most 128 KiB in one (MAX_ARG_STRLEN)
INLINE_WRITES = 64 * 1024


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
    """An SSH session to ``host`` that counts its connections and round trips; the sessions
    of one run share ``files`` (default: its own), the ssh_config and known_hosts read once."""

    def __init__(self, host: Host, options: SshOptions, files: SshFiles | None = None) -> None:
        self.host = host
        self.options = options
        self.files = files
        self.connections = 0
        self.round_trips = 0
        self._connection: Any = None
        self._run_lock = RunLock(host.name)
        self._lost: str | None = None  # why the connection was dropped under a round trip
        self._closed = threading.Event()

    # --- connection -----------------------------------------------------------------------------
    def open(self) -> None:
        from nodeprov.remote.hostkeys import SshFiles, connect  # lazy: Fabric is slow to import

        self.files = self.files or SshFiles()
        try:
            self._connection = connect(self.host, self.options, self.files)
        except HostError:
            raise
        except Exception as error:  # paramiko/socket raise many kinds; all mean unreachable
            raise Unreachable(self.host.name, "", f"cannot connect to {self.host.address}:"
                              f"{self.host.port or 22}: {_describe(error)}",
                              hint="is sshd running and the address right?") from None
        self.connections += 1
        # the port ssh_config gave (resolved only now, when connecting): the firewall keeps it
        self.host = dataclasses.replace(self.host, port=self._connection.port)
        self._closed = threading.Event()
        # a node that stops answering fails the round trip in flight instead of hanging it
        threading.Thread(target=keepalive, daemon=True, name=f"keepalive {self.host.name}",
                         args=(self._connection.transport, self.options.keepalive_interval,
                               self.options.keepalive_count_max, self._closed,
                               self._run_lock.beat, self.disconnect)).start()

    def unlock(self) -> None:
        """Free the node's run lock (the node's holder reads EOF), if this session holds it."""
        self._run_lock.free()

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

    def __enter__(self) -> Session:
        self.open()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- round trips ----------------------------------------------------------------------------
    def run(self, argv: Sequence[str], *, stdin: str | None = None, task: str = "",
            timeout: float | None = None, what: str = "",
            echo: tuple[TextIO, TextIO] | None = None) -> Result:
        """Run argv (with sudo when the host says become) and return its output, any exit;
        ``what`` names it in errors (default: argv); ``echo`` gets stdout and stderr live."""
        what = what or _short(argv)
        self.round_trips += 1
        try:
            result = self._connection.run(
                shlex.join(self._as_root(argv)), hide=echo is None, warn=True,
                out_stream=echo[0] if echo else None, err_stream=echo[1] if echo else None,
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
        # No exit status: sshd's end was killed (a node restarting), unless the connection
        # still stands: then the command died by a signal (sshd sends exit-signal, paramiko -1),
        # as a job's processes do when their deadline or the stop step kills them.
        if result.exited == -1 and not self._connection.transport.is_active():
            raise self._broken(task, what, "the node ended the session without an exit status")
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
        return self._run_lock.held

    def gather(self, probes: Sequence[Probe | None], *,
               lock_wait: float | None = None) -> tuple[Facts, list[str]]:
        """Facts and every probe's output, in one round trip. With ``lock_wait``, read under
        the node's run lock, had within that many seconds and then held until ``unlock``
        (``locked`` says if it was had; with 0, a busy lock is no error)."""
        token = secrets.token_hex(8)
        script = read_script(probes)
        if lock_wait is None:
            result = self.run(["sh", "-c", script, "nodeprov-facts", token], task="facts",
                              what="facts")
            if result.exit_code != 0:
                raise CommandFailed(self.host.name, "facts", "sh facts.sh", result.exit_code,
                                    result.stderr or result.stdout)
            return self._read(result.stdout, token, len(probes))
        # the holder's watchdog is for a connection cut without sshd noticing: a saturated
        # machine can send its heartbeats late, and must not lose the lock for it
        quiet = max(120.0, self.options.keepalive_interval * self.options.keepalive_count_max * 2)
        command = shlex.join(self._as_root(holder_argv(script, token, lock_wait, quiet)))
        self.round_trips += 1
        try:
            stdout = self._run_lock.take(
                self._connection.transport, command, token, lock_wait,
                password=self.host.become_password or "",
                prompt=SUDO_PROMPT, lost=lambda: self._lost is not None)
        except HostError:
            raise
        except Exception as error:
            raise self._broken("facts", "facts", _describe(error)) from None
        return self._read(stdout, token, len(probes))

    def _read(self, stdout: str, token: str, count: int) -> tuple[Facts, list[str]]:
        """Facts and the ``count`` probes' output from what ``read_script`` printed."""
        sections = split_sections(stdout, token)
        try:
            facts = parse_facts(sections)
        except (ValueError, KeyError) as error:
            raise HostError(self.host.name, "facts", f"cannot read the node's facts: {error}",
                            hint="is this a Linux node with iproute2?") from None
        return facts, [sections.get(f"probe.{index}", "") for index in range(count)]

    def execute(self, task: str, actions: Sequence[Action], *,
                then_read: Sequence[Probe | None] | None = None
                ) -> tuple[Facts, list[str]] | None:
        """Run a task's actions: consecutive commands and writes in one locked round trip.
        With ``then_read``, what ``gather(then_read)`` would return, read in the round trip of
        the last batch right after it; None when the actions end otherwise (an upload) or the
        read failed: ``gather`` then reads, and reports why.

            facts, observed = session.execute("hosts", [Write(path, text)], then_read=probes)
        """
        groups: list[list[Action]] = []
        for action in actions:
            if groups and _batchable(action) and _batchable(groups[-1][-1]):
                groups[-1].append(action)
            else:
                groups.append([action])  # a Run with stdin is a batch of its own
        read = None
        for position, group in enumerate(groups):
            first = group[0]
            if isinstance(first, Upload):
                self._upload(task, first)
            elif isinstance(first, Local):
                self._run_local(task, first)
            elif isinstance(first, ConfirmNewConnection):
                self._confirm_new_connection(task, first)
            else:
                batch = [action for action in group if isinstance(action, (Run, Write))]
                read = self._run_batch(task, batch,
                                       then_read if position == len(groups) - 1 else None)
        return read

    def _run_batch(self, task: str, batch: Sequence[Run | Write],
                   then_read: Sequence[Probe | None] | None) -> tuple[Facts, list[str]] | None:
        token = secrets.token_hex(8)
        lines = [_ACTIONS_PRELUDE]
        inline = 0  # bytes of content written into the script so far
        for index, action in enumerate(batch):
            if isinstance(action, Write) and inline + len(action.content.encode()) > (
                    INLINE_WRITES):
                command = shlex.join(["nodeprov_write", action.path, "",
                                      format(action.mode, "o"), self._stage(task, action)])
            elif isinstance(action, Write):
                inline += len(action.content.encode())
                command = shlex.join(["nodeprov_write", action.path, action.content,
                                      format(action.mode, "o")])
            else:
                command = shlex.join(action.argv)
            lines.append(f"step {index}\n{command}\n")
        if then_read is not None:
            read = read_script(then_read)
            lines.append(f"step {len(batch)}\nset +e\n{{\n{read}}} </dev/null\n")
        stdin = next((a.stdin for a in batch if isinstance(a, Run) and a.stdin), None)
        result = self.run(under_batch_lock(["sh", "-c", "".join(lines), "nodeprov", token]),
                          stdin=stdin, task=task, what=_short(list(map(str, batch))))
        if result.exit_code != 0:
            failed, output = _failed_step(result.stderr, token)
            if failed == len(batch):
                return None  # the actions were done, the read failed: gather reads (and says)
            action = batch[failed] if failed is not None else batch[0]
            raise CommandFailed(self.host.name, task, str(action), result.exit_code,
                                (result.stdout + output).strip(),
                                hint=action.hint if isinstance(action, Run) else "")
        return None if then_read is None else self._read(result.stdout, token, len(then_read))

    def _stage(self, task: str, action: Write) -> str:
        """Put a large Write's content in a new private file on the node (SFTP, as the SSH
        user); the batch copies it into place as root and removes it."""
        remote = f"/tmp/.nodeprov-stage-{secrets.token_hex(16)}"
        self.round_trips += 1
        try:
            with self._connection.sftp().open(remote, "wx") as staged:
                staged.chmod(0o600)
                staged.write(action.content.encode())
        except (OSError, EOFError) as error:
            raise HostError(self.host.name, task, f"staging {action} failed: "
                            f"{_describe(error)}") from None
        return remote

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
        except Exception as error:  # paramiko raises SSHException too, not only OSError/EOF
            if self._lost:
                raise self._broken(task, f"upload to {action.remote_path}", "") from None
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
        probe = Session(self.host, self.options, self.files)
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


def _batchable(action: Action) -> bool:
    return isinstance(action, Write) or (isinstance(action, Run) and action.stdin is None)


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


def connect_all(hosts: Sequence[Host], options: SshOptions, forks: int = 32,
                files: SshFiles | None = None
                ) -> tuple[dict[str, Session], dict[str, Facts], dict[str, str]]:
    """Open a session to every host in parallel and read its facts: (open sessions, facts,
    one-line errors of the hosts that failed). The caller closes the sessions."""
    from nodeprov.remote.hostkeys import SshFiles  # lazy: Fabric is slow to import

    files = files or SshFiles()
    sessions = {host.name: Session(host, options, files) for host in hosts}

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
