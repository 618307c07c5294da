"""What the runner may do on a node (actions) and how a task reads it (probes): plain values.

    Run(("systemctl", "restart", "ssh"), hint="is sshd's config valid?")
    Write("/etc/hosts", text)               # atomic, keeps owner and mode
    Probe(("sh", "-c", script, "name", arg))  # read-only; exits 0 when the state is absent

``Session.execute`` runs actions, ``Session.gather`` runs probes (wire format: nodeprov.remote).
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Run:
    """Run ``argv`` on the node (quoted by the runner, never through a hand-built string)."""

    argv: tuple[str, ...]
    hint: str = field(default="", compare=False)  # how to fix it, should it fail

    def __str__(self) -> str:
        return " ".join(self.argv)


@dataclass(frozen=True)
class Write:
    """Atomically replace ``path`` with ``content``, keeping owner and mode (new files: ``mode``).

    Falls back to an in-place write where rename is impossible (a bind-mounted /etc/hosts).
    """

    path: str
    content: str
    mode: int = 0o644

    def __str__(self) -> str:
        return f"write {self.path}"


@dataclass(frozen=True)
class Upload:
    """Copy a file from this machine to the node (SFTP), e.g. a wheel from the wheelhouse.

    A local directory sends its files (not subdirectories or dot files) into ``remote_path``,
    which must exist: a plan cannot list the files of a wheelhouse not yet downloaded.
    """

    local_path: str
    remote_path: str

    def __str__(self) -> str:
        return f"upload {self.local_path} -> {self.remote_path}"


@dataclass(frozen=True)
class ConfirmNewConnection:
    """Prove that a NEW SSH connection to the node still works (confirm-or-revert guards)."""

    why: str

    def __str__(self) -> str:
        return f"confirm a new SSH connection ({self.why})"


@dataclass(frozen=True)
class Local:
    """Run ``argv`` on this machine, not the node, e.g. fill the wheelhouse an Upload then sends.

    Like every action it never runs in ``--check``, so ``plan`` stays free of side effects.
    """

    argv: tuple[str, ...]

    def __str__(self) -> str:
        return "on this machine: " + " ".join(self.argv)


Action = Run | Write | Upload | Local | ConfirmNewConnection

# argv: pid token. Kills the process only if that pid still carries the token as one of its
# arguments: a detached helper that ended by itself may have left its pid to another process.
STOP_MARKED = 'grep -qzxF -- "$2" "/proc/$1/cmdline" 2>/dev/null && kill -- "$1"; true'


@dataclass(frozen=True)
class Probe:
    """A read-only command whose stdout ``plan`` receives as ``observed``.

    It must exit 0 even when the state is absent (print nothing, or a marker, instead).
    """

    argv: tuple[str, ...]
