"""The one rule for files nodeprov finds rather than is given: a file found by searching
(``./ansible.cfg``, ``./inventory.yaml``, the ansible.cfg in a folder ``ANSIBLE_CONFIG`` names)
or named in a file or variable (ansible.cfg's ``inventory`` and ``vault_password_file``) is
never read from a folder others can write: anyone there could plant it, and an inventory or
vault password script runs as the user, often root. What the command line names is read.

    >>> writable_by_others(Path("/tmp/inventory.yaml"))
    '/tmp is world-writable'
    >>> writable_by_others(Path("/etc/hostname"))
    ''

World-writable counts even with the sticky bit (/tmp): it stops renaming another's file, not
creating one before you do. Group-writable counts when the group is shared: its name is not
the owner's (a user private group) or it lists other members.
"""

from __future__ import annotations

import grp
import os
import pwd
import stat
from pathlib import Path


def writable_by_others(path: Path) -> str:
    """Why someone other than the owner (or root) could have put ``path`` there, or ''."""
    places = [Path(os.path.abspath(path)).parent, Path(os.path.realpath(path)).parent]
    if path.exists():
        places.append(path)
    for place in dict.fromkeys(places):
        try:
            status = place.stat()
        except OSError:
            continue  # nothing there to read, or nothing that can be read
        what = "folder" if place.is_dir() else "file"
        if status.st_mode & stat.S_IWOTH:
            return f"{place} is world-writable"
        if status.st_mode & stat.S_IWGRP and _shared(status.st_gid, status.st_uid):
            return f"the {what} {place} is writable by group {_group_name(status.st_gid)}"
    return ""


def _shared(gid: int, owner: int) -> bool:
    """Whether group ``gid`` may hold someone besides ``owner`` (a user private group, named
    as its user and listing no one else, does not)."""
    try:
        group = grp.getgrgid(gid)
        user = pwd.getpwuid(owner).pw_name
    except KeyError:
        return True  # a group or owner without a name: nothing says it is private
    return group.gr_name != user or any(member != user for member in group.gr_mem)


def _group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)
