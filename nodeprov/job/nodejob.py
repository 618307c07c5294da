"""One job on every node at once, under the node's job lock, stopped everywhere together.

    launch = launch_all(names, sessions, run_id=run_id, argv=argv, seconds=120,
                        prepare=lambda name: sessions[name].execute("job", copy))
    launch.launched["node2"]          # Result of its command, or the exception of its round trip
    launch.results["node1"]           # what the stop step printed: the run's result.json

``prepare`` runs first on every node (copy a script, sync a directory, make the run directory);
when it fails anywhere, nothing starts. Then each node's ``argv`` (from ``wrap``) starts at once,
each in its own session under ``timeout`` (a hung job dies at the deadline even if this side is
gone). The first node that fails, an SSH error or Ctrl-C stops the job everywhere: every process
that carries this run's marker in its environment (torchrun's workers start their own sessions,
so the process group alone would miss them) gets TERM, then KILL; the stop step runs on every
node after every run, and removes the run directory.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO

from nodeprov.remote.nodelock import STATE_DIR
from nodeprov.remote.session import Result
from nodeprov.util.fanout import on_every_name

if TYPE_CHECKING:
    from nodeprov.remote.session import Session

JOB_DIR = f"{STATE_DIR}/job"
KILL_AFTER = 5  # seconds between timeout's TERM and KILL: LAUNCH's --kill-after
TIMED_OUT = (124, 128 + 9)  # timeout(1): the deadline passed; the command needed a KILL
NO_DEADLINE_WAIT = 365 * 24 * 3600  # how long this side waits for a job without a deadline
JOB_LOCK = "/run/lock/nodeprov-job.lock"  # one job per node: a second would share its ports
# argv: lock run_dir workdir seconds run_id command... The run dir is gone when the launcher
# already stopped this run (Ctrl-C right after the start): then nothing starts. An empty workdir
# means the login's home. The job lock's fd passes down to every process of the job, so the lock
# is free only once the last one is gone. The pid file holds the process group (timeout is its
# leader); the marker finds the workers, which torchrun puts in sessions of their own. A deadline
# of 0 seconds is none (timeout(1) then just runs the command).
LAUNCH = r"""[ -d "$2" ] || exit 125
cd -- "${3:-$HOME}" || exit 125
exec 8>>"$1"
if ! flock -n 8; then
  echo "another nodeprov job is running on this node ($(cat -- "$1"))" >&2; exit 75
fi
echo "run $5 since $(date -u +%FT%TZ) from ${SSH_CLIENT%% *}" > "$1"
export NODEPROV_JOB_RUN="$5"
run_dir=$2 seconds=$4; shift 5
exec setsid -w sh -c 'echo $$ > "$1/pid" || exit 125; shift; exec timeout --kill-after=5 "$@"' \
  nodeprov-job "$run_dir" "$seconds" "$@"
"""
# argv: run_dir run_id. Stops whatever of the run still runs, prints its result, removes it.
FINISH = r"""marked() { grep -lszxF "NODEPROV_JOB_RUN=$2" /proc/[0-9]*/environ | cut -d/ -f3; }
group=$(cat -- "$1/pid" 2>/dev/null)
[ -n "$group" ] && kill -TERM -- "-$group" 2>/dev/null
pids=$(marked "$@"); [ -n "$pids" ] && kill -TERM $pids 2>/dev/null
tries=0
while [ -n "$(marked "$@")" ] && [ "$tries" -lt 50 ]; do sleep 0.1; tries=$((tries + 1)); done
[ -n "$group" ] && kill -KILL -- "-$group" 2>/dev/null
pids=$(marked "$@"); [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
cat -- "$1/result.json" 2>/dev/null
rm -rf -- "$1"
true
"""


def run_dir(run_id: str) -> str:
    """Where a run keeps its pid file, result and logs on a node; the stop step removes it."""
    return f"{JOB_DIR}/{run_id}"


def wrap(run_id: str, seconds: int, command: Sequence[str], workdir: str = "") -> tuple[str, ...]:
    """``command`` as a node runs it: in ``workdir`` (default: the run directory), under the
    job lock, with the run's marker, killed after ``seconds`` (0: no deadline)."""
    return ("sh", "-c", LAUNCH, "nodeprov-job", JOB_LOCK, run_dir(run_id),
            workdir or run_dir(run_id), str(seconds), run_id, *command)


@dataclass
class Launch:
    """What happened on each node: why preparing failed, how the launch ended and after how
    many seconds, in which order nodes ended, whether the launcher stopped the node while it
    still ran, what the stop step returned (the result file's text, or why it failed), and
    whether the first failure came at or after the deadline (its cause then is the deadline,
    whatever the node said: a peer killed a moment earlier resets its connections)."""

    prepare_errors: dict[str, Exception] = field(default_factory=dict)
    launched: dict[str, Result | Exception] = field(default_factory=dict)
    durations: dict[str, float] = field(default_factory=dict)
    ended: list[str] = field(default_factory=list)
    stopped: set[str] = field(default_factory=set)
    results: dict[str, str | Exception] = field(default_factory=dict)
    deadline_passed: bool = False


def launch_all(names: Sequence[str], sessions: Mapping[str, Session], *, run_id: str,
               argv: Mapping[str, Sequence[str]], seconds: int,
               prepare: Callable[[str], object],
               streams: Mapping[str, tuple[TextIO, TextIO]] | None = None) -> Launch:
    """Prepare every node, start ``argv`` on each at once; stop the job everywhere at the first
    failure or interruption (Ctrl-C anywhere in here included). ``streams`` get each node's
    stdout and stderr as they come."""
    pool = ThreadPoolExecutor(max(1, len(names)), thread_name_prefix="nodeprov-job")
    futures: dict[Future[Result], str] = {}
    launch = Launch()
    started = time.monotonic()
    wait_s = seconds + KILL_AFTER + 60 if seconds else NO_DEADLINE_WAIT
    try:
        prepared = on_every_name(names, prepare)
        launch.prepare_errors = {n: e for n, e in prepared.items() if isinstance(e, Exception)}
        # Before the first start: each node's deadline runs from its own start, so none is
        # reached before launched_at + seconds.
        launched_at = time.monotonic()
        for name in names if not launch.prepare_errors else ():
            futures[pool.submit(sessions[name].run, argv[name], task="job", timeout=wait_s,
                                echo=streams[name] if streams else None)] = name
        pending = set(futures)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                launch.ended.append(futures[future])
                launch.durations[futures[future]] = time.monotonic() - started
            if any(f.exception() is not None or f.result().exit_code != 0 for f in done):
                # a failure seen this late follows a deadline kill
                launch.deadline_passed = 0 < seconds <= time.monotonic() - launched_at
                break
    finally:
        launch.stopped = {futures[f] for f in futures if not f.done()}
        # Always, also after success: it reads the result and removes the run's files.
        launch.results = on_every_name(names, lambda name: _finish(sessions[name], run_id))
        pool.shutdown(wait=True)  # the launches return once their processes are gone
    for future, name in futures.items():
        error = future.exception()
        launch.launched[name] = error if isinstance(error, Exception) else future.result()
        launch.durations.setdefault(name, time.monotonic() - started)
    return launch


def _finish(session: Session, run_id: str) -> str:
    result = session.run(["sh", "-c", FINISH, "nodeprov-job-stop", run_dir(run_id), run_id],
                         task="job", timeout=60)
    return result.stdout
