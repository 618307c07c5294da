r"""The one wording of what a person must do by hand (a ``Plan.conflicts`` item, an effect
check's by-hand repair): where, the text found there, why it matters, then what to do and the
one command line that does it, shell-quoted::

    >>> print(line("/etc/hosts", 2, "10.1.2.77 node1", "maps node1 to 10.1.2.77, not 10.0.0.1"))
    ... # doctest: +NORMALIZE_WHITESPACE
    /etc/hosts:2 '10.1.2.77 node1' maps node1 to 10.1.2.77, not 10.0.0.1: comment it out:
    sed -i '/^10\.1\.2\.77 node1$/s/^/# /' /etc/hosts
    >>> print(by_hand("ufw rule '[ 1] Anywhere DENY IN 10.0.0.0/24'", "comes first", REMOVE,
    ...               ("ufw", "delete", "deny", "from", "10.0.0.0/24")))
    ... # doctest: +NORMALIZE_WHITESPACE
    ufw rule '[ 1] Anywhere DENY IN 10.0.0.0/24' comes first: remove it:
    ufw delete deny from 10.0.0.0/24

A file's line is commented out, not deleted, and found by its whole text, not by its number:
so the commands printed for several lines of one file (by one task or by two, before or after
apply rewrites a block above them) are right in any order, a second run finds nothing to do,
and the user's text stays there to read. A line of the same text elsewhere in the file is
commented out too: the same setting again, which would win or lose the same way. A shell
file's line becomes ``: # ...`` (a command that does nothing, so an ``if`` around it stays
valid); a line that goes on on the next one (a ``\`` at its end) is left to edit by hand,
since commenting out its first part would make the rest a line of its own::

    >>> print(line("/etc/profile", 3, "  export A=1 \\", "sets A", syntax="shell"))
    ... # doctest: +NORMALIZE_WHITESPACE
    /etc/profile:3 'export A=1 \\' sets A: edit it by hand (it goes on on the next line, which
    commenting out this one would leave as a line of its own)
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Literal

COMMENT_OUT = "comment it out"
REMOVE = "remove it"
EDIT_BY_HAND = "edit it by hand"
APPLY_NOW = "apply it now, then repair again"
# what is not itself in a sed basic regular expression (and its delimiter)
_BRE_SPECIAL = frozenset("\\/.*[^$")
FILE_COMMENT = "# "
SHELL_COMMENT = ": # "  # ':' does nothing, so a block it is in stays a valid one
# how a file is read: a shell's and pam_env's join a line ending in '\\' with the next
Syntax = Literal["plain", "pam_env", "shell"]
# what a by-hand item says before its command: a test runs the command after the last of these
VERBS = (COMMENT_OUT, REMOVE, APPLY_NOW)


def by_hand(where: str, why: str, verb: str, argv: Sequence[str]) -> str:
    """``WHERE WHY: VERB: COMMAND``, the command ``argv`` quoted (``~/`` left to the shell)."""
    return f"{where} {why}: {verb}: {' '.join(quote(arg) for arg in argv)}"


def line(path: str, number: int, text: str, why: str, *, syntax: Syntax = "plain") -> str:
    """A line of a file that is in the way: its place (``number`` as sed counts, from 1), its
    ``text`` as the file has it (split at "\\n" only, a CRLF line's "\\r" kept; printed
    stripped and quoted as Python does, so a node's control characters print escaped), why,
    and the sed that comments out the lines of that file with exactly that text. A character
    that cannot be printed is matched by one ``.`` per byte of it, under ``LC_ALL=C`` where it
    is not ASCII (in a UTF-8 locale a ``.`` is a whole character; in C, one byte); a byte the
    node sent that is not UTF-8 (read as U+FFFD) cannot be matched by text, so that line is
    found by its number. ``syntax``: ``"shell"`` for a file a shell runs, ``"pam_env"`` for
    one pam_env reads (both join a line ending in ``\\`` with the next)."""
    where = place(path, number, text)
    if _goes_on(text, syntax):
        return manual(where, why, "it goes on on the next line, which commenting out this one "
                      "would leave as a line of its own")
    prefix = SHELL_COMMENT if syntax == "shell" else FILE_COMMENT
    if "\ufffd" in text:
        return by_hand(where, f"{why} (a byte there is not UTF-8: the line is found by its "
                       "number, as verify read the file)", COMMENT_OUT,
                       ("LC_ALL=C", "sed", "-i", f"{number}s/^[^{prefix[0]}]/{prefix}&/", path))
    pattern = "".join(_pattern(char) for char in text)
    command = ("sed", "-i", f"/^{pattern}$/s/^/{prefix}/", path)
    return by_hand(where, why, COMMENT_OUT,
                   ("LC_ALL=C", *command) if any(not char.isascii() and not char.isprintable()
                                                 for char in text) else command)


def place(path: str, number: int, text: str) -> str:
    """``PATH:NUMBER 'TEXT'``, the text stripped and quoted as Python does."""
    return f"{path}:{number} {text.strip()!r}"


def manual(where: str, why: str, reason: str) -> str:
    """``WHERE WHY: edit it by hand (REASON)``: where no command could be right."""
    return f"{where} {why}: {EDIT_BY_HAND} ({reason})"


def _goes_on(text: str, syntax: Syntax) -> bool:
    """Whether ``text``'s reader joins the next line to it: a '\\' at its end (pam_env's
    after a comment is left off), or for a shell a quote it leaves open."""
    if syntax == "shell":
        try:
            shlex.split(text, comments=True)
        except ValueError:
            return True
    body = text.split("#", 1)[0] if syntax == "pam_env" else text
    return syntax != "plain" and body.rstrip(" \t\r").endswith("\\")


def _pattern(char: str) -> str:
    """``char`` in a sed basic regular expression: itself, escaped where special, or one
    ``.`` per UTF-8 byte where it cannot be printed (so it never reaches the terminal)."""
    if char in _BRE_SPECIAL:
        return f"\\{char}"
    return char if char.isprintable() else "." * len(char.encode(errors="replace"))


def quote(arg: str) -> str:
    """``shlex.quote``, but a path in the home folder keeps its ``~/`` unquoted, so the shell
    of the user who runs it expands it to that user's home.

        >>> quote("~/.nccl.conf"), quote("/tmp/a b")
        ('~/.nccl.conf', "'/tmp/a b'")
    """
    if arg.startswith("~/"):
        return "~/" + shlex.quote(arg[2:])
    return shlex.quote(arg)
