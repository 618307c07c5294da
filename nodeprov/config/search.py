"""Which ansible.cfg Ansible reads: the first that exists and can be read of
``$ANSIBLE_CONFIG`` (a folder means its ansible.cfg), ``./ansible.cfg`` (not in a world-writable
folder: anyone could plant one there), ``~/.ansible.cfg``, ``/etc/ansible/ansible.cfg``.

    >>> find_config_file({"ANSIBLE_CONFIG": "/nonexistent/x.cfg", "HOME": "/nonexistent"},
    ...                  Path("/nonexistent"), Path("/nonexistent/etc.cfg"))
    (None, '')
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from nodeprov.config.convert import expand

SYSTEM_CONFIG = Path("/etc/ansible/ansible.cfg")


def find_config_file(environ: Mapping[str, str], cwd: Path,
                     system: Path = SYSTEM_CONFIG) -> tuple[Path | None, str]:
    """(the file, a warning): the warning says a ./ansible.cfg was passed over because the
    folder is world-writable, as Ansible warns."""
    candidates: list[Path] = []
    given: Path | None = None
    if "ANSIBLE_CONFIG" in environ:
        given = Path(os.path.normpath(cwd / expand(environ["ANSIBLE_CONFIG"], environ)))
        given = given / "ansible.cfg" if given.is_dir() else given
        candidates.append(given)
    warning = ""
    try:
        world_writable = bool(cwd.stat().st_mode & stat.S_IWOTH)
    except OSError:
        world_writable = False
    if world_writable:
        if (cwd / "ansible.cfg").exists():
            warning = (f"{cwd}/ansible.cfg: not read: the folder is world-writable (as "
                       "Ansible, which then ignores it); point ANSIBLE_CONFIG at it")
    else:
        candidates.append(cwd / "ansible.cfg")
    candidates.append(Path(expand("~/.ansible.cfg", environ)))
    candidates.append(system)
    for candidate in candidates:
        if candidate.exists() and os.access(candidate, os.R_OK):
            return candidate, "" if candidate == given else warning
    return None, warning
