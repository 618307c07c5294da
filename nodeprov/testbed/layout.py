"""Where a testbed keeps its files, and which directories may hold them.

    >>> layout = Layout(checked_dir(Path("/srv/tb")))
    >>> layout.ssh_config, layout.node_dir("node2")
    (PosixPath('/srv/tb/ssh_config'), PosixPath('/srv/tb/nodes/node2'))
    >>> checked_dir(Path("/var/lib/tb"))
    Traceback (most recent call last):
    nodeprov.errors.InputError: --dir: /var/lib/tb is inside /var, ...
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nodeprov.errors import InputError
from nodeprov.util import validate

DEFAULT_DIR = Path("/srv/nodeprov-testbed")
# Trees a node sees privately (overlays and tmpfs); its own upper directories and the files its
# sshd reads must lie outside all of them, since overlayfs refuses an upper inside its lower.
NODE_PRIVATE_TREES = ("/etc", "/opt", "/root", "/home", "/var", "/usr", "/tmp", "/run",
                      "/proc", "/sys", "/dev")
# overlayfs options are comma-separated and its lowerdir list colon-separated.
UNSAFE_CHARACTERS = frozenset(",:\\ \t\n")


def checked_dir(path: Path) -> Path:
    """``path`` made absolute, or InputError if a node could not use it as its state directory."""
    resolved = path.resolve()
    for tree in NODE_PRIVATE_TREES:
        if resolved.is_relative_to(tree):
            raise InputError(f"{resolved} is inside {tree}, which every node replaces with its "
                             f"own copy; choose a directory outside "
                             f"{', '.join(NODE_PRIVATE_TREES)}, e.g. {DEFAULT_DIR}",
                             field="--dir")
    if resolved == Path("/"):
        raise InputError("/ cannot hold a testbed; choose e.g. " + str(DEFAULT_DIR), field="--dir")
    unsafe = sorted(UNSAFE_CHARACTERS & set(str(resolved)))
    if unsafe:
        raise InputError(f"{resolved} contains {''.join(unsafe)!r}, which overlayfs mount "
                         "options cannot hold; choose a plainer path", field="--dir")
    return resolved


def checked_shared(paths: Sequence[str], testbed_dir: Path) -> list[str]:
    """The folders a testbed shares read-only with its nodes: existing folders given by their
    real path (no symlink in it), neither holding nor inside the testbed's own directory (its
    client key), nor a tree every node mounts afresh. InputError names the one that is not.

    >>> checked_shared(["/usr/share"], Path("/srv/tb"))
    ['/usr/share']
    """
    checked = []
    for given in paths:
        try:
            path = validate.absolute_path(given)
        except ValueError as error:
            raise InputError(str(error), field="--share") from None
        real = Path(path).resolve()
        if not real.is_dir() or str(real) != path:
            raise InputError(f"{path} is not a folder (give an existing one by its real path, "
                             "without a symlink in it)", field="--share")
        if real == Path("/") or real.is_relative_to(testbed_dir) or testbed_dir.is_relative_to(
                real) or any(real.is_relative_to(tree) for tree in ("/proc", "/sys", "/dev")):
            raise InputError(f"{path} cannot be shared: it is /, holds or lies in the testbed's "
                             "directory, or is under /proc, /sys or /dev", field="--share")
        checked.append(path)
    return checked


@dataclass(frozen=True)
class Layout:
    """The paths inside one testbed directory."""

    dir: Path

    @property
    def state_file(self) -> Path:
        return self.dir / "state.json"

    @property
    def client_key(self) -> Path:
        return self.dir / "id_ed25519"

    @property
    def client_public_key(self) -> Path:
        return self.dir / "id_ed25519.pub"

    @property
    def known_hosts(self) -> Path:
        return self.dir / "known_hosts"

    @property
    def ssh_config(self) -> Path:
        return self.dir / "ssh_config"

    @property
    def inventory(self) -> Path:
        return self.dir / "inventory.yaml"

    @property
    def nodes_dir(self) -> Path:
        return self.dir / "nodes"

    def node_dir(self, name: str) -> Path:
        return self.nodes_dir / name

    @property
    def files(self) -> tuple[Path, ...]:
        """The files `up` writes directly into the directory (``nodes/`` aside)."""
        return (self.client_key, self.client_public_key, self.known_hosts, self.ssh_config,
                self.inventory, self.state_file)
