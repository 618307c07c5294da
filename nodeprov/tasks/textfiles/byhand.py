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
commented out too: the same setting again, which would win or lose the same way.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

COMMENT_OUT = "comment it out"
REMOVE = "remove it"
APPLY_NOW = "apply it now, then repair again"
# what is not itself in a sed basic regular expression (and its delimiter)
_BRE_SPECIAL = frozenset("\\/.*[^$")
# what a by-hand item says before its command: a test runs the command after the last of these
VERBS = (COMMENT_OUT, REMOVE, APPLY_NOW)


def by_hand(where: str, why: str, verb: str, argv: Sequence[str]) -> str:
    """``WHERE WHY: VERB: COMMAND``, the command ``argv`` quoted (``~/`` left to the shell)."""
    return f"{where} {why}: {verb}: {' '.join(quote(arg) for arg in argv)}"


def line(path: str, number: int, text: str, why: str) -> str:
    """A line of a file that is in the way: its place (``number`` as sed counts, from 1), its
    ``text`` as the file has it (without its newline; printed stripped and quoted as Python
    does, so a node's control characters print escaped), why, and the sed that comments out
    the lines of that file with exactly that text (any character in a control character's
    place)."""
    pattern = "".join(f"\\{char}" if char in _BRE_SPECIAL else char if char.isprintable()
                      else "." for char in text)  # a control character is not printed
    return by_hand(f"{path}:{number} {text.strip()!r}", why, COMMENT_OUT,
                   ("sed", "-i", f"/^{pattern}$/s/^/# /", path))


def quote(arg: str) -> str:
    """``shlex.quote``, but a path in the home folder keeps its ``~/`` unquoted, so the shell
    of the user who runs it expands it to that user's home.

        >>> quote("~/.nccl.conf"), quote("/tmp/a b")
        ('~/.nccl.conf', "'/tmp/a b'")
    """
    if arg.startswith("~/"):
        return "~/" + shlex.quote(arg[2:])
    return shlex.quote(arg)
