"""Which ansible.cfg Ansible reads: the first that exists and can be read of
``$ANSIBLE_CONFIG`` (a folder means its ansible.cfg), ``./ansible.cfg``, ``~/.ansible.cfg``,
``/etc/ansible/ansible.cfg``. A file found by searching is passed over, with a warning, in a
folder others can write (``trust``): Ansible does so for a world-writable current folder;
nodeprov for each place searched, and for an empty ``ANSIBLE_CONFIG`` too (which Ansible
reads as the current folder, unchecked). A file ``ANSIBLE_CONFIG`` names is read.

    >>> find_config_file({"ANSIBLE_CONFIG": "/nonexistent/x.cfg", "HOME": "/nonexistent"},
    ...                  Path("/nonexistent"), Path("/nonexistent/etc.cfg"))
    (None, '')
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from nodeprov.config.convert import expand
from nodeprov.config.trust import writable_by_others

SYSTEM_CONFIG = Path("/etc/ansible/ansible.cfg")


def find_config_file(environ: Mapping[str, str], cwd: Path,
                     system: Path = SYSTEM_CONFIG) -> tuple[Path | None, str]:
    """(the file, a warning): the warning names a file passed over and what to do."""
    named: Path | None = None  # a file ANSIBLE_CONFIG names: read wherever it is
    searched: list[Path] = []
    if environ.get("ANSIBLE_CONFIG"):
        given = Path(os.path.normpath(cwd / expand(environ["ANSIBLE_CONFIG"], environ)))
        if given.is_dir():
            searched.append(given / "ansible.cfg")
        else:
            named = given
    searched += [cwd / "ansible.cfg", Path(expand("~/.ansible.cfg", environ)), system]
    warning = ""
    for candidate in ([named] if named else []) + searched:
        if not (candidate.exists() and os.access(candidate, os.R_OK)):
            continue
        why = "" if candidate == named else writable_by_others(candidate)
        if not why:
            return candidate, warning
        warning = warning or (f"{candidate}: not read: {why}, so anyone could have put it "
                              "there (as Ansible passes over a world-writable folder); point "
                              "ANSIBLE_CONFIG at the file if it is yours")
    return None, warning
