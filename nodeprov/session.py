"""One SSH connection per host, reused for every round trip; the only place commands run.

    session = Session(host, SshOptions())
    facts, observed = session.gather([probe_a, probe_b])   # one round trip
    session.execute("hosts", [Write("/etc/hosts", text)])   # one round trip

Commands are argv lists joined by ``shlex.join``; inventory values reach the node as quoted data.
"""

from __future__ import annotations

import io
import secrets
import shlex
import socket
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nodeprov.errors import CommandFailed, HostError, Unreachable
from nodeprov.facts import FACTS_SCRIPT, Facts, parse_facts, split_sections
from nodeprov.inventory import Host
from nodeprov.tasks.base import Action, ConfirmNewConnection, Local, Probe, Run, Upload, Write

STATE_DIR = "/var/lib/nodeprov"
LOCK_PATH = f"{STATE_DIR}/lock"
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

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def __enter__(self) -> Session:
        self.open()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- round trips ----------------------------------------------------------------------------
    def run(self, argv: Sequence[str], *, stdin: str | None = None, task: str = "",
            timeout: float | None = None) -> Result:
        """Run argv (with sudo when the host says become) and return its output, any exit."""
        if self.host.become:
            sudo = ["sudo", "-S", "-p", "", "--"] if self.host.become_password else [
                "sudo", "-n", "--"]
            argv = [*sudo, *argv]
            if self.host.become_password:
                stdin = self.host.become_password + "\n" + (stdin or "")
        self.round_trips += 1
        try:
            result = self._connection.run(
                shlex.join(argv), hide=True, warn=True,
                timeout=timeout or self.options.command_timeout,
                in_stream=io.StringIO(stdin) if stdin is not None else False,
            )
        except Exception as error:
            raise HostError(self.host.name, task, f"connection failed during "
                            f"{_short(argv)}: {_describe(error)}",
                            hint="did the node reboot or the network drop?") from None
        return Result(result.stdout, result.stderr, result.exited)

    def gather(self, probes: Sequence[Probe | None]) -> tuple[Facts, list[str]]:
        """Facts and every probe's output, in one round trip."""
        token = secrets.token_hex(8)
        script = [FACTS_SCRIPT]
        for index, probe in enumerate(probes):
            if probe is not None:
                script.append(f"section probe.{index}\n{shlex.join(probe.argv)} || true\n")
        script.append("section end\n")
        result = self.run(["sh", "-c", "".join(script), "nodeprov-facts", token], task="facts")
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
                          stdin=stdin, task=task)
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

