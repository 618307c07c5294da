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
import functools
import secrets
import shlex
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nodeprov.errors import CommandFailed, HostError
from nodeprov.remote.actions import Action, ConfirmNewConnection, Local, Probe, Run, Upload, Write
from nodeprov.remote.batch import batch_script, batches, failed_step
from nodeprov.remote.channel import Terms, converse
from nodeprov.remote.facts import Facts, parse_facts, read_script, split_sections
from nodeprov.remote.nodelock import RunLock, holder_argv, keepalive, under_batch_lock
from nodeprov.remote.options import OUTPUT_LIMIT, SshOptions
from nodeprov.remote.sudo import Answer, SudoPrompt, SudoRefused, as_root, refused
from nodeprov.remote.transfer import describe, run_local, stage, upload
from nodeprov.util.units import clipped

if TYPE_CHECKING:
    from nodeprov.inventory.model import Host
    from nodeprov.remote.hostkeys import SshFiles
    from nodeprov.util.progress import Transfers


@dataclass(frozen=True)
class Result:
    stdout: str
    stderr: str
    exit_code: int


class Session:
    """An SSH session to ``host`` that counts its connections and round trips; the sessions
    of one run share ``files`` (default: its own), the ssh_config and known_hosts read once."""

    def __init__(self, host: Host, options: SshOptions, files: SshFiles | None = None,
                 transfers: Transfers | None = None) -> None:
        self.host = host
        self.options = options
        self.files = files
        self.transfers = transfers  # hears of each upload's progress (util.progress)
        self.connections = 0
        self.round_trips = 0
        self._connection: Any = None
        self._run_lock = RunLock(host.name)
        self._lost: str | None = None  # why the connection was dropped under a round trip
        self._closed = threading.Event()
        self._sudo = SudoPrompt.new()  # this session's: no command can know it in advance

    # --- connection -----------------------------------------------------------------------------
    def open(self) -> None:
        from nodeprov.remote.dial import connect  # lazy: Fabric is slow to import
        from nodeprov.remote.hostkeys import SshFiles

        self.files = self.files or SshFiles()
        self._connection = connect(self.host, self.options, self.files)  # Unreachable: why
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
    def run(self, argv: Sequence[str], *, task: str = "", timeout: float | None = None,
            what: str = "", as_login: bool = False) -> Result:
        """Run argv (with sudo when the host says become, unless ``as_login``: then as the
        login user, in the environment any new SSH session gets) and return its output, any
        exit; ``what`` names it in errors (default: argv)."""
        what = what or clipped(" ".join(argv), 59)
        self.round_trips += 1
        password = self.host.become_password if self.host.become and not as_login else None
        answer = Answer(self._sudo, password) if password else None
        try:
            result = self._connection.run(
                shlex.join(argv if as_login else as_root(self.host, argv, self._sudo)),
                hide=True, warn=True, timeout=timeout or self.options.command_timeout,
                in_stream=False,  # a byte per 10 ms: data goes by ``converse``
                watchers=[answer] if answer else [])
        except Exception as error:
            if type(getattr(error, "reason", None)).__name__ == "ResponseNotAccepted":
                raise refused(self.host.name, task, what) from None
            raise self._broken(task, what, describe(error)) from None
        if self._lost:
            raise self._broken(task, what, "")
        if getattr(result, "over_limit", False):
            raise HostError(self.host.name, task, f"{what} printed over {OUTPUT_LIMIT} "
                            "characters, more than nodeprov reads from a node",
                            hint="is a file it reads that large?")
        # No exit status: sshd's end was killed (a node restarting), unless the connection
        # still stands: then the command died by a signal (sshd sends exit-signal, paramiko -1),
        # as a job's processes do when their deadline or the stop step kills them.
        if result.exited == -1 and not self._connection.transport.is_active():
            raise self._broken(task, what, "the node ended the session without an exit status")
        stderr = self._sudo.command_stderr(result.stderr) if answer else result.stderr
        return Result(result.stdout, stderr, result.exited)

    def converse(self, argv: Sequence[str], token: str, terms: Terms, *, task: str,
                 what: str = "", as_login: bool = False) -> Result:
        """``run`` on a channel of its own (remote.channel), for bulk data to stdin or a
        heartbeat byte, as ``terms`` say (no timeout there: the command timeout); ``argv``
        says ``token`` on stderr once it runs."""
        what = what or clipped(" ".join(argv), 59)
        self.round_trips += 1
        try:
            done = converse(self._connection.transport,
                            shlex.join(argv if as_login else as_root(self.host, argv, self._sudo,
                                                                     mark=False)), token,
                            dataclasses.replace(terms, timeout=terms.timeout
                                                or self.options.command_timeout),
                            password="" if as_login else self.host.become_password or "",
                            prompt=self._sudo.text)
        except SudoRefused:
            raise refused(self.host.name, task, what) from None
        except (TimeoutError, InterruptedError) as error:  # too slow, or stopped by the caller
            raise HostError(self.host.name, task, f"{what}: {error}") from None
        except Exception as error:
            raise self._broken(task, what, describe(error)) from None
        if self._lost or done.exit_code == -1 and not self._connection.transport.is_active():
            raise self._broken(task, what, "the node ended the session without an exit status")
        return Result(done.stdout, done.stderr, done.exit_code)

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
        command = shlex.join(as_root(self.host, holder_argv(script, token, lock_wait, quiet),
                                     self._sudo, mark=False))
        self.round_trips += 1
        try:
            stdout = self._run_lock.take(
                self._connection.transport, command, token, lock_wait,
                password=self.host.become_password or "",
                prompt=self._sudo.text, lost=lambda: self._lost is not None)
        except HostError:
            raise
        except Exception as error:
            raise self._broken("facts", "facts", describe(error)) from None
        return self._read(stdout, token, len(probes))

    def _read(self, stdout: str, token: str, count: int) -> tuple[Facts, list[str]]:
        """Facts and the ``count`` probes' output from what ``read_script`` printed."""
        sections = split_sections(stdout, token)
        try:
            facts = parse_facts(sections)
        except Exception as error:  # a ValueError says what would be valid; another is a
            bug = not isinstance(error, ValueError)  # parser's, met by this node's output alone
            said = f"internal error {type(error).__name__}: {str(error)[:200]}" if bug else error
            raise HostError(self.host.name, "facts", f"cannot read the node's facts: {said}",
                            hint="please report this" if bug else "") from None
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
        groups = batches(actions)
        read = None
        for position, group in enumerate(groups):
            first = group[0]
            if isinstance(first, Upload):
                self._upload(task, first)
            elif isinstance(first, Local):
                run_local(self.host.name, task, first, self.options.command_timeout)
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
        script = batch_script(batch, then_read, functools.partial(self.stage, task))
        result = self.run(under_batch_lock(["sh", "-c", script, "nodeprov", token]),
                          task=task, what=clipped(" ".join(map(str, batch)), 59))
        if result.exit_code != 0:
            failed, output = failed_step(result.stderr, token)
            if failed == len(batch):
                return None  # the actions were done, the read failed: gather reads (and says)
            action = batch[failed] if failed is not None else batch[0]
            raise CommandFailed(self.host.name, task, str(action), result.exit_code,
                                (result.stdout + output).strip(),
                                hint=action.hint if isinstance(action, Run) else "")
        return None if then_read is None else self._read(result.stdout, token, len(then_read))

    def stage(self, task: str, action: Write) -> str:
        """Put a large Write's content in a new private file on the node (SFTP, as the SSH
        user); the batch copies it into place as root and removes it."""
        self.round_trips += 1
        return stage(self._connection, self.host.name, task, action)

    def _upload(self, task: str, action: Upload) -> None:
        self.round_trips += 1
        try:
            upload(self._connection, action, self.transfers, self.host.name,
                   f"{task}: {Path(action.local_path).name}")
        except Exception as error:  # paramiko raises SSHException too, not only OSError/EOF
            if self._lost:
                raise self._broken(task, f"upload to {action.remote_path}", "") from None
            raise HostError(self.host.name, task, f"upload to {action.remote_path} failed: "
                            f"{describe(error)}") from None

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

