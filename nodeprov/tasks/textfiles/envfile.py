"""Environment files as their readers parse them: pam_env's /etc/environment and NCCL's nccl.conf.

    >>> pam_env_line("NCCL_SOCKET_IFNAME", "=eth0")
    'NCCL_SOCKET_IFNAME="=eth0"'
    >>> parse_pam_env('# comment\\nexport A="x y"\\nB=1 # note\\n')
    [(2, 'A', 'x y'), (3, 'B', '1 ')]
    >>> parse_nccl_conf("NCCL_SOCKET_IFNAME==eth0\\n")
    [(1, 'NCCL_SOCKET_IFNAME', '=eth0')]
    >>> parse_profile_sh("export A='x y'\\nB=$(cat f)\\n")
    [(1, 'A', 'x y'), (2, 'B', None)]

Each parser returns (line number, name, value) in file order, lines counted at "\\n" as sed
counts them; which one wins differs: pam_env and a shell keep the last assignment, NCCL the
first (src/misc/param.cc: ``setEnvFile`` calls ``setenv(name, value, 0)``, after the
environment, ~/.nccl.conf, then /etc/nccl.conf).
"""

from __future__ import annotations

import re
import shlex

from nodeprov.util import validate

_NAME = re.compile(r"^[A-Za-z0-9_]+$")  # pam_env's own check: isalnum or '_'
# pam_env reads lines into a 1024-byte buffer; longer lines are cut.
PAM_ENV_MAX_LINE = 1023


def pam_env_value(value: str) -> str:
    """``value`` if pam_env can carry it exactly, else ValueError saying why.

    pam_env ends a value at '#' (a comment, even inside quotes) and expands nothing.
    """
    text = validate.text_value(value)
    if "#" in text:
        raise ValueError(f"{text!r} contains '#', which /etc/environment reads as a comment")
    return text


def pam_env_line(name: str, value: str) -> str:
    """``NAME="value"``: pam_env drops the closing quote only, so inner quotes survive."""
    line = f'{validate.env_name(name)}="{pam_env_value(value)}"'
    if len(line) > PAM_ENV_MAX_LINE:
        raise ValueError(f"{name}: value too long for /etc/environment "
                         f"(lines are cut at {PAM_ENV_MAX_LINE} characters)")
    return line


def parse_pam_env(text: str) -> list[tuple[int, str, str]]:
    """Assignments in an /etc/environment text, unquoted the way pam_env does it; a line that
    a '\\' at the end of the one before continues is part of that one (``_assemble_line``)."""
    found = []
    continued = False
    for number, line in enumerate(text.split("\n"), 1):
        was_continued, continued = continued, _continues(line)
        entry = line.lstrip(" \t")
        if was_continued:
            continue
        if entry.startswith("export "):
            entry = entry[len("export "):]
        entry = entry.split("#", 1)[0]
        name, sep, value = entry.partition("=")
        if not sep or not _NAME.match(name):
            continue
        if value[:1] in ('"', "'"):
            value = _unquote_like_pam(value[1:])
        found.append((number, name, value))
    return found


def _unquote_like_pam(body: str) -> str:
    """What pam_env keeps after an opening quote: everything but a quote that ends the line."""
    return "".join(char for index, char in enumerate(body)
                   if char not in "\"'" or index + 1 < len(body))


def parse_nccl_conf(text: str) -> list[tuple[int, str, str]]:
    """Assignments in an nccl.conf text: NCCL splits each line at its first '=', nothing more."""
    found = []
    for number, line in enumerate(text.split("\n"), 1):
        name, sep, value = line.partition("=")
        if sep and _NAME.match(name):
            found.append((number, name, value))
    return found


# the name a pam_env.conf line (``NAME [DEFAULT=...] [OVERRIDE=...]``) or an environment file
# line (``[export ]NAME[=value]``) sets, as pam_env takes it: the first word, up to '=', blanks
# or a comment
_SESSION_SETTING = re.compile(r"^[ \t]*(?:export[ \t]+)?([A-Za-z0-9_]+)(?=[=\s#]|$)")


def session_settings(text: str) -> list[tuple[int, str]]:
    """(line number, name) of each line that sets (or unsets) a variable for a new session, in
    a file pam_env reads in either of its syntaxes (pam_env.conf's, as /etc/security/
    pam_env.conf and ~/.pam_environment; an environment file's, as /etc/default/locale) or
    sshd's ~/.ssh/environment. A line that a '\\' at the end of the one before continues is
    part of that one (pam_env's ``_assemble_line``).

        >>> session_settings("# A=1\\nB DEFAULT=x \\\\\\n  C=2\\nexport D=1\\nLANG\\n")
        [(2, 'B'), (4, 'D'), (5, 'LANG')]
    """
    found = []
    continued = False
    for number, line in enumerate(text.split("\n"), 1):
        match = None if continued else _SESSION_SETTING.match(line.split("#", 1)[0])
        if match:
            found.append((number, match[1]))
        continued = _continues(line)
    return found


def _continues(line: str) -> bool:
    """Whether pam_env joins the next line to ``line``: a '\\' ends it, a comment left off."""
    return line.split("#", 1)[0].rstrip(" \t\r").endswith("\\")


# `NAME=...` or `export NAME=...` at the start of a line of a shell script
_SHELL_ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def parse_profile_sh(text: str) -> list[tuple[int, str, str | None]]:
    """Assignments at the start of a line of a shell script (/etc/profile.d/*.sh), which a
    login shell runs: the value as the shell would take it, None where it cannot be told
    without running the script (an expansion, more than one word, a quote or a '\\' that
    goes on on the next line, or a line a quote left open before may be inside); a line that a
    '\\' at the end of the one before goes on into is not a start.

        >>> parse_profile_sh('A="x,\\nB=y"\\nC=1 \\\\\\n  D=2\\n')
        [(1, 'A', None), (2, 'B', None), (3, 'C', None)]
    """
    found: list[tuple[int, str, str | None]] = []
    lines = text.split("\n")
    for number, line in enumerate(lines, 1):
        match = _SHELL_ASSIGNMENT.match(line)
        if not match or number > 1 and lines[number - 2].rstrip("\r").endswith("\\"):
            continue
        try:
            words: list[str] | None = shlex.split(match[2], comments=True)
        except ValueError:  # an unclosed quote: the value goes on past this line
            words = None
        # a quote left open above (as shlex reads sh) may hold this line
        plain = (words is not None and len(words) <= 1 and not _quote_open(lines[:number - 1])
                 and not set("$`\\;&|") & set(match[2].split("#", 1)[0]))
        found.append((number, match[1], (words[0] if words else "") if plain else None))
    return found


def _quote_open(lines: list[str]) -> bool:
    """Whether a quote is still open after ``lines``, as shlex reads them."""
    try:
        shlex.split("\n".join(lines), comments=True)
    except ValueError:
        return True
    return False
