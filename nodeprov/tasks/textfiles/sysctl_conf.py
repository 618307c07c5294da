"""Kernel settings a reboot applies: the sysctl.d files, their order, and what they set.

    >>> settings("net.core.somaxconn = 4096\\n# x\\n-net/ipv4/tcp_rmem=4096  87380 6291456\\n")
    [(0, 'net.core.somaxconn', '4096'), (2, 'net.ipv4.tcp_rmem', '4096  87380 6291456')]
    >>> same_value("4096\\t87380\\t6291456\\n", "4096 87380 6291456")
    True

At boot (procps' ``sysctl --system`` and systemd-sysctl alike) the ``*.conf`` files of
SYSCTL_DIRS are applied in order of their names, of files with the same name only the first
folder's; procps then reads /etc/sysctl.conf. A later setting of a key wins. The ipv6 and sysctl
tasks persist their keys in a file of their own and keep those files in step with this.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Mapping
from typing import Any

from nodeprov.tasks.textfiles import blocks, byhand
from nodeprov.util import validate

SYSCTL_CONF = "/etc/sysctl.conf"
DEBIAN_LINK = "/etc/sysctl.d/99-sysctl.conf"  # Debian: a link to /etc/sysctl.conf
SYSCTL_DIRS = ("/etc/sysctl.d", "/run/sysctl.d", "/usr/local/lib/sysctl.d", "/usr/lib/sysctl.d",
               "/lib/sysctl.d")
BOOT_FILES = (SYSCTL_CONF, *(f"{folder}/*.conf" for folder in SYSCTL_DIRS))  # read_many's
# dotted form: a lowercase first part, then parts of letters, digits, _ and - (eth0, lo)
_KEY = re.compile(r"[a-z][a-z0-9_]*(?:\.[A-Za-z0-9_-]+)+")


def proc_path(key: str) -> str:
    return "/proc/sys/" + key.replace(".", "/")


# a sysctl name in dotted form
key = validate.matching(_KEY, "a sysctl name (dotted, e.g. net.core.rmem_max)")


def value(setting: Any) -> str:
    """A value as ``sysctl`` takes it: printable, one line, not empty, e.g. '4096 87380 6291456'."""
    text = validate.text_value(setting).strip()
    if not text or not text.isprintable():
        raise ValueError(f"{setting!r} is not a sysctl value (printable text on one line, e.g. "
                         "67108864 or '4096 87380 6291456')")
    return text


def same_value(live: str, wanted: str) -> bool:
    """Whether a value read from /proc/sys is ``wanted`` (the kernel prints tabs between
    numbers, a file has spaces)."""
    return live.split() == wanted.split()


def boot_file(path: Any) -> str:
    """A .conf file in /etc/sysctl.d, so that a reboot applies it."""
    text = validate.absolute_path(path)
    if posixpath.dirname(text) != SYSCTL_DIRS[0] or not text.endswith(".conf"):
        raise ValueError(f"{text!r} is not read at boot; use a .conf file in {SYSCTL_DIRS[0]} "
                         f"(e.g. {SYSCTL_DIRS[0]}/90-nodeprov.conf)")
    return text


def probe_paths(own: str, keys: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """What a task persisting ``keys`` in ``own`` reads: the live values, and every file that
    sets them at boot (read_many_probe's arguments)."""
    return (*map(proc_path, keys), own, *BOOT_FILES)


def settings(text: str) -> list[tuple[int, str, str]]:
    """(line index, key, value) of a sysctl.conf text, keys in dotted form; lines end at "\\n"
    only, as sed counts them."""
    found = []
    for index, line in enumerate(text.split("\n")):
        entry = line.strip()
        if not entry or entry[0] in "#;":
            continue
        # a leading '-' tells systemd-sysctl to ignore a failure; the setting is the same
        name, sep, setting = entry.removeprefix("-").partition("=")
        if sep:
            found.append((index, name.strip().replace("/", "."), setting.strip()))
    return found


def comment_out(text: str, wanted: Mapping[str, str]) -> str:
    """``text`` with every line setting a key of ``wanted`` to something else commented out
    (blocks.COMMENT_PREFIX); other lines kept byte for byte."""
    clashing = {index for index, name, setting in settings(text)
                if name in wanted and not same_value(setting, wanted[name])}
    return "".join(blocks.COMMENT_PREFIX + line if index in clashing else line
                   for index, line in enumerate(blocks.split_lines(text, keepends=True)))


def boot_settings(found: Mapping[str, str | None], key: str) -> list[tuple[str, int, str]]:
    """Where the next boot sets ``key``, in the order it applies them (the last wins):
    (path, line number, value), from the texts read at ``probe_paths``.

        >>> boot_settings({"/etc/sysctl.d/99-z.conf": "x.y = 2\\n", "/etc/sysctl.conf": "x.y=3"},
        ...               "x.y")
        [('/etc/sysctl.d/99-z.conf', 1, '2'), ('/etc/sysctl.conf', 1, '3')]
    """
    by_name: dict[str, str] = {}
    for folder in SYSCTL_DIRS:
        for path in sorted(p for p in found if posixpath.dirname(p) == folder):
            by_name.setdefault(posixpath.basename(path), path)
    paths = [by_name[name] for name in sorted(by_name)]
    conf = found.get(SYSCTL_CONF)
    # Debian's 99-sysctl.conf is a link to /etc/sysctl.conf: read once, as that file
    paths = [p for p in paths if not (p == DEBIAN_LINK and found.get(p) == conf)]
    return [(path, index + 1, setting)
            for path in (*paths, SYSCTL_CONF)
            for index, name, setting in settings(found.get(path) or "") if name == key]


def overriding(found: Mapping[str, str | None], own: str, wanted: Mapping[str, str],
               subject: str) -> list[str]:
    """The lines of sysctl.d files the next boot applies after ``own`` that set a key of
    ``wanted`` otherwise, each with the command that comments it out (``subject`` names what
    would not stay as asked): Plan.conflicts, since they are not ours to edit. /etc/sysctl.conf,
    read last, is left out: the tasks comment its lines out themselves."""
    conflicts = []
    for key, value in wanted.items():
        for path, number, setting in boot_settings(found, key):
            if (path != SYSCTL_CONF and posixpath.basename(path) > posixpath.basename(own)
                    and not same_value(setting, value)):
                text = (found.get(path) or "").split("\n")[number - 1]  # as settings()
                conflicts.append(byhand.line(
                    path, number, text,
                    f"is applied after {own} at boot, so {subject} would not stay as asked"))
    return conflicts
