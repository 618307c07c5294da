"""One job on every node at once, one job per node, stopped everywhere together, and by each node
itself when nodeprov is gone. The node's side is ``nodeside/launcher.py``::

    job = Job("nodeprov-run-1a2b", commands, seconds=120, env={"PYTHONUNBUFFERED": "1"})
    launch = launch_all(names, sessions, job, prepare=lambda name: ..., streams=logs.streams)
    launch.launched["node2"]          # Result of its launcher, or the exception of its round trip
    launch.results["node1"]           # Stopped: the run's result.json, each rank's own exit code

``prepare`` runs first on every node (copy the job's files), then the launcher's prepare (the
run's folder; why the user's run before was stopped, for ``notes``) and, for ``env``, a private
file by SFTP (the values never appear on a command line); when any of it fails anywhere,
nothing starts. Then every launcher starts at once, each on a channel of its own carrying a
heartbeat byte every HEARTBEAT s: a node whose nodeprov was killed or cut off stops its job
within QUIET s and frees the job lock. The first node that fails, an SSH error or Ctrl-C stops
the job everywhere (the launcher's stop step, which runs on every node after every run: it
kills every process carrying the run's marker and removes the run's folder).
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from importlib import resources
from typing import TYPE_CHECKING

from nodeprov.errors import CommandFailed
from nodeprov.nodeside.launcher import EXIT_BUSY
from nodeprov.remote.actions import Write
from nodeprov.remote.channel import Terms
from nodeprov.remote.nodelock import STATE_DIR
from nodeprov.remote.session import Result
from nodeprov.util.fanout import on_every_name
from nodeprov.util.safejson import loads_object

if TYPE_CHECKING:
    from nodeprov.remote.channel import Echo
    from nodeprov.remote.session import Session

JOB_DIR = f"{STATE_DIR}/job"  # root's runs, and the verification job's package
HEARTBEAT = 5.0  # seconds between the bytes that tell a node nodeprov is still there
QUIET = 60.0  # a node stops a job whose nodeprov sent nothing for this long
KILL_AFTER = 5  # seconds between the launcher's TERM and KILL
TIMED_OUT = (124, 128 + 9)  # the launcher's exits at the deadline: TERM did, KILL was needed
NO_DEADLINE_WAIT = 365 * 24 * 3600  # how long this side waits for a job without a deadline


@dataclass(frozen=True)
class Job:
    """What runs: each node's command (torchrun ...), the deadline (0: none), the environment
    (values kept off command lines), where it starts ('': home), where runs live on the node
    ('': the launcher's default for its user), where the script starts in each command (0: no
    rank records), and per node whether it runs as the login user (else root, by become)."""

    run_id: str
    commands: Mapping[str, Sequence[str]]
    seconds: int = 0
    env: Mapping[str, str] = field(default_factory=dict)
    workdir: str = ""
    state: str = ""
    script_at: int = 0
    as_login: Mapping[str, bool] = field(default_factory=dict)


@dataclass(frozen=True)
class RankEnd:
    """How a rank ended, in its own words: exit code (-N: signal N) and seconds it ran."""

    exit_code: int
    seconds: float
    ended: float  # the node's clock, seconds since the epoch


@dataclass(frozen=True)
class Stopped:
    """What the stop step found: the run's result.json (the verification job's), rank ends."""

    result: str | None
    ranks: Mapping[int, RankEnd]


@dataclass
class Launch:
    """What happened on each node: why preparing failed, how the launch ended and after how
    many seconds, in which order nodes ended, whether the launcher stopped the node while it
    still ran, what the stop step found (or why it failed), the node's note about the run
    before, and whether the first failure came at or after the deadline (its cause then is the
    deadline, whatever the node said: a peer killed a moment earlier resets its connections)."""

    prepare_errors: dict[str, Exception] = field(default_factory=dict)
    launched: dict[str, Result | Exception] = field(default_factory=dict)
    durations: dict[str, float] = field(default_factory=dict)
    ended: list[str] = field(default_factory=list)
    stopped: set[str] = field(default_factory=set)
    results: dict[str, Stopped | Exception] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    deadline_passed: bool = False


def run_dir(run_id: str) -> str:
    """Where a root run keeps its files on a node (the verification job's result.json)."""
    return f"{JOB_DIR}/{run_id}"


LOCKHOLDER = resources.files("nodeprov.nodeside").joinpath("lockholder.py").read_text()


def launcher(*args: str) -> tuple[str, ...]:
    """The node-side launcher's command line."""
    script = resources.files("nodeprov.nodeside").joinpath("launcher.py").read_text()
    return ("python3", "-I", "-c", script, *args)


def launch_all(names: Sequence[str], sessions: Mapping[str, Session], job: Job, *,
               prepare: Callable[[str], object] = lambda name: None,
               streams: Mapping[str, tuple[Echo, Echo]] | None = None) -> Launch:
    """Prepare every node, start the job on each at once; stop it everywhere at the first
    failure or interruption (Ctrl-C anywhere in here included). ``streams`` get each node's
    stdout and stderr as they come."""
    pool = ThreadPoolExecutor(max(1, len(names)), thread_name_prefix="nodeprov-job")
    futures: dict[Future[Result], str] = {}
    launch = Launch()
    env_files: dict[str, str] = {}
    started = time.monotonic()
    wait_s = job.seconds + KILL_AFTER + 60 if job.seconds else NO_DEADLINE_WAIT

    def ready(name: str) -> None:
        prepare(name)
        note = _prepare_run(sessions[name], job, job.as_login.get(name, False))
        if note:
            launch.notes[name] = note
        if job.env:
            env_files[name] = sessions[name].stage("job", Write("env", json.dumps(job.env)))

    try:
        prepared = on_every_name(names, ready)
        launch.prepare_errors = {n: e for n, e in prepared.items() if isinstance(e, Exception)}
        # Before the first start: each node's deadline runs from its own start, so none is
        # reached before launched_at + seconds.
        launched_at = time.monotonic()
        for name in names if not launch.prepare_errors else ():
            futures[pool.submit(_start, sessions[name], job, name, env_files.get(name, ""),
                                wait_s, streams[name] if streams else None)] = name
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                launch.ended.append(futures[future])
                launch.durations[futures[future]] = time.monotonic() - started
            if any(f.exception() is not None or f.result().exit_code != 0 for f in done):
                # a failure seen this late follows a deadline kill
                launch.deadline_passed = 0 < job.seconds <= time.monotonic() - launched_at
                break
    finally:
        launch.stopped = {futures[f] for f in futures if not f.done()}
        # Always, also after success: it reads the ranks' ends and removes the run's files.
        launch.results = on_every_name(names, lambda name: _stop(
            sessions[name], job, job.as_login.get(name, False), env_files.get(name, "")))
        pool.shutdown(wait=True)  # the launches return once their processes are gone
    for future, name in futures.items():
        error = future.exception()
        launch.launched[name] = error if isinstance(error, Exception) else future.result()
        launch.durations.setdefault(name, time.monotonic() - started)
    return launch


def _prepare_run(session: Session, job: Job, as_login: bool) -> str:
    """The run's folder on the node; the note about the user's run before, as a line."""
    made = session.run(launcher("prepare", job.state, job.run_id), task="job",
                       what="make the run's folder", as_login=as_login)
    if made.exit_code != 0:
        raise CommandFailed(session.host.name, "job", "make the run's folder", made.exit_code,
                            made.stderr or made.stdout)
    note = loads_object(made.stdout, what="the launcher's answer").get("note")
    if not isinstance(note, dict):
        return ""
    return (f"the run before, {note.get('run')} (since {note.get('since')}), was stopped by "
            f"the node at {note.get('stopped')}: {note.get('why')}")


def _start(session: Session, job: Job, name: str, env_file: str, wait_s: float,
           echo: tuple[Echo, Echo] | None) -> Result:
    token = secrets.token_hex(8)
    argv = launcher("start", job.state, job.run_id, token, f"{QUIET:g}", str(job.seconds),
                    job.workdir, env_file, str(job.script_at), "--", *job.commands[name])
    as_login = job.as_login.get(name, False)
    out, err = echo or (None, None)
    result = session.converse(argv, token, Terms(beat=HEARTBEAT, out=out, err=err,
                                                 timeout=wait_s),
                              task="job", what="the job", as_login=as_login)
    if result.exit_code != EXIT_BUSY:
        return result
    # the node is held: who holds it, as the kernel says (anyone may bind the lock's name)
    named = session.run(("python3", "-I", "-c", LOCKHOLDER), task="job", timeout=30,
                        what="name the job lock's holder", as_login=as_login)
    said = named.stdout.strip() if named.exit_code == 0 else "its holder could not be named"
    return Result(result.stdout, f"{result.stderr.rstrip()} ({said})\n", result.exit_code)


def _stop(session: Session, job: Job, as_login: bool, env_file: str) -> Stopped:
    """The stop step: nothing of the run left on the node, what it left behind read."""
    done = session.run(launcher("stop", job.state, job.run_id, env_file), task="job",
                       timeout=60, what="stop the job", as_login=as_login)
    if done.exit_code != 0:
        raise CommandFailed(session.host.name, "job", "stop the job", done.exit_code,
                            done.stderr or done.stdout)
    found = loads_object(done.stdout, what="the stop step's answer")
    ranks = {}
    for rank, record in (found.get("ranks") or {}).items():
        try:  # the node's words: a record that is not one is left out
            ranks[int(rank)] = RankEnd(int(record["exit_code"]), float(record["ended"])
                                       - float(record["started"]), float(record["ended"]))
        except (KeyError, TypeError, ValueError):
            continue
    return Stopped(found.get("result"), ranks)
