"""The node side of a nodeprov job: one job per node, and none that outlives nodeprov.

nodeprov runs this file's text with the node's python3 (standard library, 3.8+) as the job's
user. STATE is where runs live ('': /var/lib/nodeprov/job for root, else ~/.cache/nodeprov/job)::

    python3 -I -c LAUNCHER prepare STATE RUN_ID     # {"run_dir": "...", "note": null}
    python3 -I -c LAUNCHER start STATE RUN_ID TOKEN QUIET DEADLINE WORKDIR ENV_FILE SCRIPT_AT \\
        -- COMMAND...
    python3 -I -c LAUNCHER stop STATE RUN_ID ENV_FILE   # {"result": null, "ranks": {...}}

``prepare`` makes the run's folder (0700) and prints, once, why the user's run before was
stopped if nodeprov did not stop it. ``start`` says TOKEN on stderr (sudo is done: stdin is this
program's now), reads the job's environment from ENV_FILE (JSON, the user's own 0600 file: never
on a command line) and removes it, and takes the job lock: the abstract unix socket
``@nodeprov-job`` (per network namespace, as the rendezvous port; any user's; freed by the
kernel with its last holder; nothing on disk to plant a link on); a second job exits 75 (busy),
and ``lockholder.py`` names the holder. COMMAND starts in WORKDIR (empty: home) in a session of
its own, each process marked ``NODEPROV_JOB_RUN=RUN_ID``; with SCRIPT_AT > 0 it is torchrun,
COMMAND[SCRIPT_AT:] the script, and each rank starts through ``RANK_SHIM``, which records the
rank's own exit code. The job's exit code is this program's (128+N after signal N). The job is
stopped (TERM, 5 s, KILL) after DEADLINE s (0: never; exit 124, 137 if KILL was needed) and when
nodeprov is gone: stdin, where nodeprov sends a byte every few seconds, ends or stays silent
QUIET s (0: not watched); then the run's folder goes and the note says why (exit 143). ``stop``
stops what of the run still runs, prints the ranks' records and the run's result.json, and
removes the run's folder (and ENV_FILE if the job never read it).
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import select
import shutil
import signal
import socket
import stat
import subprocess
import sys
import threading
import time
from typing import NamedTuple

LOCK_NAME = b"\0nodeprov-job"
MARKER = "NODEPROV_JOB_RUN"
GRACE = 5.0  # seconds between TERM and KILL
EXIT_BUSY, EXIT_NOT_STARTED, EXIT_DEADLINE, EXIT_KILLED, EXIT_GONE = 75, 125, 124, 137, 143
NOTE = "last-stopped.json"
UTC = "%Y-%m-%dT%H:%M:%SZ"
# Started by torchrun (--no-python) for each rank: RUN_DIR PYTHON -u SCRIPT ARGS... It runs the
# rank as torchrun itself would and records how it ended. torchrun signals the rank's process
# group, which holds the rank: this process only waits (its caught signals are the default
# again in the rank). A rank killed by a signal ends this process by the same signal.
RANK_SHIM = r"""import json, os, signal, subprocess, sys, time
for number in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(number, lambda *_: None)
started = time.time()
code = subprocess.call(sys.argv[2:])
rank = os.environ.get("RANK", "").strip()
if rank.isdigit():
    folder = os.path.join(sys.argv[1], "ranks")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, rank + ".json"), "w") as record:
        json.dump({"exit_code": code, "started": started, "ended": time.time()}, record)
if code < 0:
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
sys.exit(code)
"""


def state_dir(given: str) -> str:
    """The user's folder of runs, made 0700 where missing; refused unless it is the user's own
    folder (not a link)."""
    base = os.path.expanduser(given or (
        "/var/lib/nodeprov/job" if os.geteuid() == 0 else "~/.cache/nodeprov/job"))
    os.makedirs(base, mode=0o700, exist_ok=True)
    if not stat.S_ISDIR((found := os.lstat(base)).st_mode) or found.st_uid != os.geteuid():
        raise SystemExit(f"{base} is not a folder of this user's own")
    return base


def marked(run_id: str) -> list[int]:
    """The run's processes (of those whose environment this user may read)."""
    entry = f"{MARKER}={run_id}".encode()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as environ:
                if entry in environ.read().split(b"\0"):
                    found.append(int(name))
        except OSError:
            continue
    return found


def stop_processes(run_id: str, group: int | None) -> bool:
    """TERM the run's processes (and the job's process group), KILL what is left after GRACE
    s; True when KILL was needed."""
    for number in (signal.SIGTERM, signal.SIGKILL):
        left = marked(run_id)
        if number == signal.SIGKILL and not left:
            return False
        for pid in left + ([-group] if group else []):  # -group: the job's process group
            with contextlib.suppress(OSError):  # gone already
                os.kill(pid, number)
        until = time.monotonic() + GRACE
        while number == signal.SIGTERM and marked(run_id) and time.monotonic() < until:
            time.sleep(0.1)
    return True


def _read(path: str) -> str | None:
    try:
        with open(path) as text:
            return text.read()
    except OSError:
        return None


def prepare(state: str, run_id: str) -> dict[str, object]:
    base = state_dir(state)
    os.mkdir(os.path.join(base, run_id), 0o700)
    note = _read(os.path.join(base, NOTE))
    if note is not None:
        os.unlink(os.path.join(base, NOTE))
    return {"run_dir": os.path.join(base, run_id), "note": json.loads(note) if note else None}


def stop(state: str, run_id: str) -> dict[str, object]:
    run_dir = os.path.join(state_dir(state), run_id)
    group = (_read(os.path.join(run_dir, "pid")) or "").strip()
    stop_processes(run_id, int(group) if group.isdigit() else None)
    folder = os.path.join(run_dir, "ranks")
    ranks = {name.split(".")[0]: json.loads(_read(os.path.join(folder, name)) or "null")
             for name in (sorted(os.listdir(folder)) if os.path.isdir(folder) else ())}
    result = _read(os.path.join(run_dir, "result.json"))
    shutil.rmtree(run_dir, ignore_errors=True)
    return {"result": result, "ranks": ranks}


def read_env(path: str) -> dict[str, str]:
    """The job's environment from a private file of this user (or of the login user sudo came
    from), which is then removed."""
    if not path:
        return {}
    handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        found = os.fstat(handle)
        owners = {os.getuid(), int(os.environ.get("SUDO_UID", os.getuid()))}
        if not stat.S_ISREG(found.st_mode) or found.st_uid not in owners or \
                found.st_mode & 0o077:
            raise SystemExit(f"refused {path}: not a private file of this user")
        with os.fdopen(os.dup(handle), "rb") as text:
            values = json.loads(text.read().decode())
    finally:
        os.close(handle)
        os.unlink(path)
    return {str(name): str(value) for name, value in values.items()}


class Lock:
    """The node's job lock, held while this object lives; it tells a second job who holds it."""

    def __init__(self, run_id: str) -> None:
        self.run_id, self.heard = run_id, time.monotonic()
        self.since = time.strftime(UTC, time.gmtime())
        self.socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.socket.bind(LOCK_NAME)  # EADDRINUSE: held
        self.socket.listen(8)
        threading.Thread(target=self._answer, daemon=True).start()

    def describe(self) -> str:
        origin = os.environ.get("SSH_CLIENT", "").split(" ")[0]
        return (f"run {self.run_id} of {pwd.getpwuid(os.geteuid()).pw_name} since {self.since}"
                + (f" from {origin}" if origin else "") + f"; its nodeprov was last heard "
                f"{time.monotonic() - self.heard:.0f} s ago")

    def _answer(self) -> None:
        while True:
            peer, _ = self.socket.accept()
            with peer:
                peer.sendall(self.describe().encode()[:400])


def watch(quiet: float, lock: Lock, gone: list[str], ended: threading.Event) -> None:
    """Until stdin ends, or stays silent ``quiet`` s: then nodeprov is gone."""
    while True:
        readable, _, _ = select.select([0], [], [], quiet)
        if not readable:
            gone.append(f"nodeprov sent no heartbeat for {quiet:.0f} s (its machine or the "
                        "network went away)")
            break
        if not os.read(0, 4096):
            gone.append("nodeprov's connection closed (it was killed, or its machine went "
                        "away)")
            break
        lock.heard = time.monotonic()
    ended.set()


def torchrun_command(command: list[str], script_at: int, run_dir: str) -> list[str]:
    """torchrun keeping its logs in the run's folder, each rank started through RANK_SHIM with
    the python torchrun would use (the venv's, beside it)."""
    shim = os.path.join(run_dir, "rank.py")
    with open(shim, "w") as text:
        text.write(RANK_SHIM)
    python = os.path.join(os.path.dirname(command[0]), "python")
    return [command[0], "--log-dir", os.path.join(run_dir, "logs"), *command[1:script_at],
            "--no-python", "--", sys.executable, "-I", shim, run_dir, python, "-u",
            *command[script_at:]]


class Start(NamedTuple):
    """``start``'s arguments, as the module docstring lists them."""

    state: str
    run_id: str
    token: str
    quiet: float
    deadline: float
    workdir: str
    env_file: str
    script_at: int
    command: list[str]


def start(asked: Start) -> int:
    state, run_id, token, quiet, deadline, workdir, env_file, script_at, command = asked
    sys.stderr.write(token + "\n")
    sys.stderr.flush()
    environment = {**os.environ, **read_env(env_file), MARKER: run_id}
    try:
        lock = Lock(run_id)
    except OSError:
        # who holds it is for lockholder.py to say: anyone may bind the name
        sys.stderr.write("another nodeprov job is running on this node\n")
        return EXIT_BUSY
    run_dir = os.path.join(state_dir(state), run_id)
    if not os.path.isdir(run_dir):  # nodeprov stopped this run before it started
        return EXIT_NOT_STARTED
    if script_at:
        command = torchrun_command(command, script_at, run_dir)
    try:
        job = subprocess.Popen(command, cwd=workdir or os.path.expanduser("~"), env=environment,
                               stdin=subprocess.DEVNULL, start_new_session=True,
                               pass_fds=(lock.socket.fileno(),))
    except OSError as error:  # the folder to start in (--chdir), else the command, as a shell
        where = f"--chdir {workdir}" if workdir and not os.path.isdir(workdir) else command[0]
        sys.stderr.write(f"{where}: {error.strerror}\n")
        return 127
    with open(os.path.join(run_dir, "pid"), "w") as pid:
        pid.write(str(job.pid))
    gone: list[str] = []
    ended = threading.Event()
    if quiet:
        threading.Thread(target=watch, args=(quiet, lock, gone, ended), daemon=True).start()
    until = time.monotonic() + deadline if deadline else None
    while job.poll() is None and not ended.wait(0.2):
        if until is not None and time.monotonic() >= until:
            break
    if job.poll() is not None:
        return job.returncode if job.returncode >= 0 else 128 - job.returncode
    killed = stop_processes(run_id, job.pid)
    if not gone:
        return EXIT_KILLED if killed else EXIT_DEADLINE
    with open(os.path.join(state_dir(state), NOTE), "w") as note:
        json.dump({"run": run_id, "why": gone[0], "since": lock.since,
                   "stopped": time.strftime(UTC, time.gmtime())}, note)
    shutil.rmtree(run_dir, ignore_errors=True)
    return EXIT_GONE


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "prepare":
        print(json.dumps(prepare(argv[1], argv[2])))
        return 0
    if len(argv) == 4 and argv[0] == "stop":  # argv[3]: the environment file, if still there
        if argv[3]:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(argv[3])
        print(json.dumps(stop(argv[1], argv[2])))
        return 0
    if len(argv) > 10 and argv[0] == "start" and argv[9] == "--":
        state, run_id, token, quiet, deadline, workdir, env_file, script_at = argv[1:9]
        try:
            return start(Start(state, run_id, token, float(quiet), float(deadline), workdir,
                               env_file, int(script_at), argv[10:]))
        except OSError as error:  # the environment file, the run's folder
            print(f"{error.filename}: {error.strerror}", file=sys.stderr)
            return 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
