"""``memlock``: the job's login user may lock as much memory as RDMA needs, in a fresh SSH login.

    - name: Locked-memory limit for RDMA
      memlock: {user: trainer, limit: unlimited}

NCCL registers its buffers with the NIC (``ibv_reg_mr``), which pins them: with the usual 64 KiB
or 8 MiB limit that fails and NCCL falls back to sockets. A job started over SSH gets its limit
on two paths, and the task keeps both:

- pam_limits, in sshd's PAM session stack (``UsePAM yes``, Debian's and RHEL's default), sets
  the login's soft and hard limit from /etc/security/limits.conf and limits.d/*.conf: the task
  writes ``USER soft|hard memlock LIMIT`` to ``LIMITS_FILE``. A user line beats a ``*`` one
  whatever the file order, and ``*`` lines never apply to root (limits.conf(5)).
- Without pam_limits the login inherits sshd's own limit, which systemd sets from the service's
  ``LimitMEMLOCK`` (a unit's limits apply to its processes, not to sessions of another unit:
  user@.service's are the user manager's, not an SSH login's). Where systemd runs the node, the
  task writes a drop-in for the ssh/sshd unit and restarts sshd (KillMode=process in both
  distributions' units: open sessions stay), then proves a new connection works.

``user`` defaults to the inventory's ``ansible_user``; ``limit`` is ``unlimited`` or KiB. A node
without RDMA ports gets nothing (the plan says so). The effect, a new SSH connection's
``ulimit -l``, is ``verify``'s check (nodeprov/checks/test_memlock.py): pam_limits sets a
connection's limits once, when it opens, so the plan (whose facts come over the run's own
connection, opened before the files were written) cannot see it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from nodeprov.remote import reader
from nodeprov.tasks.base import (
    Change,
    ConfirmNewConnection,
    Context,
    Plan,
    Probe,
    Run,
    TaskType,
    Write,
    checked,
)
from nodeprov.tasks.textfiles import blocks, byhand
from nodeprov.util import validate

LIMITS_FILE = "/etc/security/limits.d/90-nodeprov-memlock.conf"
LIMITS_FILES = ("/etc/security/limits.conf", "/etc/security/limits.d/*.conf")
# the unit files of sshd (Debian: ssh.service, RHEL: sshd.service), /usr merged or not
UNITS = tuple(f"{root}/systemd/system/{name}.service"
              for root in ("/usr/lib", "/lib") for name in ("ssh", "sshd"))
DROP_IN = "90-nodeprov-memlock.conf"
UNKNOWN_USER = ("the job's login user is unknown (ansible_user unset), so no limit is written: "
                "set ansible_user in the inventory, or the memlock task's user")
HEADER = "# Written by nodeprov (memlock task): RDMA needs locked memory; edits are overwritten.\n"


@dataclass(frozen=True)
class MemlockParams:
    user: str = ""
    limit: str = "unlimited"

    def __post_init__(self) -> None:
        if self.user:
            checked("user", validate.user_name, self.user)
        if self.limit != "unlimited":
            checked("limit", validate.positive_int, self.limit)


def probe(params: MemlockParams) -> Probe:
    return reader.read_many_probe(*LIMITS_FILES, *UNITS,
                                  *(f"/etc/systemd/system/{unit.rsplit('/', 1)[1]}.d/{DROP_IN}"
                                    for unit in UNITS))


def plan(ctx: Context, params: MemlockParams, observed: str) -> Plan:
    if not ctx.facts.rdma.present:
        return Plan.noop("no RDMA ports on this node: its jobs lock no memory for a NIC")
    user = params.user or ctx.host.user
    if not user:
        return Plan.noop(warnings=[UNKNOWN_USER])
    found = reader.observed_files(observed)
    changes = [_write(LIMITS_FILE, found.get(LIMITS_FILE),
                      HEADER + "".join(f"{user} {kind} memlock {params.limit}\n"
                                       for kind in ("soft", "hard")))]
    unit = next((path.rsplit("/", 1)[1] for path in UNITS if found.get(path) is not None), None)
    notes = []
    if ctx.facts.systemd and unit:
        path = f"/etc/systemd/system/{unit}.d/{DROP_IN}"
        limit = "infinity" if params.limit == "unlimited" else f"{params.limit}K"
        drop_in = _write(path, found.get(path), f"{HEADER}[Service]\nLimitMEMLOCK={limit}\n")
        if drop_in:
            changes.append(Change(f"restart {unit} with LimitMEMLOCK={limit}", (
                *drop_in.actions, Run(("systemctl", "daemon-reload")),
                Run(("systemctl", "try-restart", unit)),
                ConfirmNewConnection(f"{unit} restarted")), drop_in.diff))
    else:
        notes.append("no systemd sshd unit here: sshd's own limit is its parent's; "
                     "pam_limits sets the login's")
    wanted = [change for change in changes if change]
    if wanted:
        return Plan.of(*wanted, notes=notes)
    return Plan.noop(f"{LIMITS_FILE} gives {user} memlock {params.limit}", *notes)


def _write(path: str, old: str | None, text: str) -> Change | None:
    if old == text:
        return None
    return Change(f"write {path}", (Write(path, text),),
                  diff=blocks.unified_diff(path, old, text))


def memlock_lines(found: Mapping[str, str | None], user: str) -> list[str]:
    """Every memlock line for ``user`` in the probe's limits files but ours (the lines
    pam_limits may take over ours: a ``*`` or ``@group`` line never beats a user's), by hand:
    each with the sed that comments it out."""
    return [byhand.line(path, number, line, f"may take over {LIMITS_FILE}")
            for path, text in sorted(found.items()) if text is not None and path != LIMITS_FILE
            and path.startswith("/etc/security/")
            for number, line in enumerate(text.split("\n"), 1)  # as sed counts, "\r" kept
            if _memlock_line(line, user)]


def _memlock_line(line: str, user: str) -> bool:
    words = line.split("#", 1)[0].split()
    return len(words) == 4 and words[2] == "memlock" and words[0] == user


TASK = TaskType("memlock", "Locked-memory limit of the job's SSH login for RDMA", MemlockParams,
                probe, plan)
