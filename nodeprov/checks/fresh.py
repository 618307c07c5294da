"""What a process started by a NEW SSH session sees on a node: the login user (no sudo), as
torchrun's launcher would log in. One round trip per node, on the connection the checks opened
(each command gets a session of its own from sshd, with what PAM set up when the connection
opened: the checks' own connections are new, so that is what a new login gets now): its
environment (/etc/environment, PAM), a login shell's (/etc/profile.d after pam_env), its
locked-memory limit (pam_limits), the nccl.conf files NCCL reads, and what glibc answers for
the cluster's names (nsswitch: files, DNS, in its order; the first answer is the one a process
gets).

    seen = read_all_fresh(["node1", "node2"], sessions, gathered)   # {"node2": "why not"}

    >>> parse_fresh("A=1\\nB==eth0\\n@@T name node2\\n10.0.0.2 STREAM node2\\n", "T").resolved
    {'node2': ['10.0.0.2']}
"""

from __future__ import annotations

import ipaddress
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from nodeprov.errors import HostError
from nodeprov.remote.facts import Facts, split_sections
from nodeprov.remote.session import Session
from nodeprov.tasks.textfiles import byhand, envfile
from nodeprov.util.fanout import DEFAULT_FORKS, on_every, raise_first

# the files besides /etc/environment that set a new SSH session's variables: pam_env's (its
# configuration, the user's file, Debian's second pam_env line's envfile) and sshd's (where
# PermitUserEnvironment is on); and those a login shell runs besides /etc/profile.d (which the
# nccl_env task reads), each as the login user reads it
SESSION_FILES = ("~/.pam_environment", "/etc/security/pam_env.conf", "/etc/default/locale",
                 "~/.ssh/environment")
LOGIN_FILES = ("/etc/profile", "~/.bash_profile", "~/.bash_login", "~/.profile")
# $1 a marker token, $2 the getent database, then the names to resolve (the node's own
# hostname among them); getent fails when nothing resolves; NCCL reads $NCCL_CONF_FILE instead
# of ~/.nccl.conf where it is set
_SCRIPT = """token=$1 family=$2; shift 2
mark() { printf '\\n@@%s %s\\n' "$token" "$1"; }
env; mark login; "${SHELL:-/bin/sh}" -lc env </dev/null 2>/dev/null || true
mark memlock
# shellcheck disable=SC3045 # -l, not POSIX: dash, bash and busybox sh all have it
ulimit -l 2>/dev/null || true
mark nccl_conf_user; cat -- "${NCCL_CONF_FILE:-$HOME/.nccl.conf}" 2>/dev/null
mark nccl_conf; cat /etc/nccl.conf 2>/dev/null
""" + "".join(f'[ ! -e "{home}" ] || {{ mark "file {path}"; cat -- "{home}" 2>/dev/null; }}\n'
              for path in (*SESSION_FILES, *LOGIN_FILES)
              for home in [path.replace("~/", "$HOME/")]) + """for name do
  mark "name $name"; getent "$family" -- "$name" || true
  mark "first $name"; getent hosts -- "$name" || true
done
"""
# the tasks whose checks look at a new session
AREAS = ("hosts", "nccl_env", "nccl_fabric", "memlock")
USER_NCCL_CONF = "~/.nccl.conf"


@dataclass(frozen=True)
class Fresh:
    environment: dict[str, str]
    login: dict[str, str] = field(default_factory=dict)  # a login shell's environment
    # name: addresses, as getaddrinfo sorts them (getent ahosts*: RFC 6724, the longest
    # prefix shared with a source address first), and as gethostbyname answers (the first
    # match in /etc/hosts: getent hosts); a process may ask either way
    resolved: dict[str, list[str]] = field(default_factory=dict)
    first_match: dict[str, list[str]] = field(default_factory=dict)
    # (path, text) of the files NCCL reads after the environment, in its order; absent: none
    nccl_files: tuple[tuple[str, str], ...] = ()
    # {path: text} of the SESSION_FILES and LOGIN_FILES that are there (bash reads the first
    # of its three that is, even an empty one)
    files: dict[str, str] = field(default_factory=dict)
    # the session's ulimit -l: KiB or "unlimited" ("": it printed nothing a limit looks like)
    memlock: str = ""


def parse_env(output: str) -> dict[str, str]:
    """``env``'s output as a mapping.

        >>> parse_env("A=1\\nB==eth0\\n")
        {'A': '1', 'B': '=eth0'}
    """
    pairs = (line.partition("=") for line in output.splitlines())
    return {name: value for name, sep, value in pairs if sep}


def _addresses(getent: str) -> list[str]:
    """The addresses ``getent ahosts*`` printed, first first, each once (a line per socket
    type); anything that is not an address is left out (node output is not trusted)."""
    found = []
    for line in getent.splitlines():
        fields = line.split()
        try:
            found.append(str(ipaddress.ip_address(fields[0])))
        except (IndexError, ValueError):
            continue
    return list(dict.fromkeys(found))


def parse_fresh(output: str, token: str) -> Fresh:
    environment = parse_env(output.partition(f"\n@@{token} ")[0])
    sections = split_sections(output, token)
    user_conf = environment.get("NCCL_CONF_FILE") or USER_NCCL_CONF
    return Fresh(environment, parse_env(sections.get("login", "")),
                 _named(sections, "name "), _named(sections, "first "),
                 tuple((path, text) for path, text in ((user_conf, sections.get(
                     "nccl_conf_user", "")), ("/etc/nccl.conf", sections.get("nccl_conf", "")))
                       if text),
                 {path: text for path in (*SESSION_FILES, *LOGIN_FILES)
                  if (text := sections.get(f"file {path}")) is not None},
                 _limit(sections.get("memlock", "")))


def _limit(said: str) -> str:
    """``ulimit -l``'s answer if it is one (node output is not trusted), else "".

        >>> _limit("unlimited\\n"), _limit("65536\\n"), _limit("sh: ulimit: bad\\n")
        ('unlimited', '65536', '')
    """
    said = said.strip()
    return said if said == "unlimited" or said.isdigit() else ""


def nccl_reads(seen: Fresh, wanted: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """What NCCL takes from its files where the environment lacks a variable (the first
    assignment, ~/.nccl.conf before /etc/nccl.conf), and by hand each line it takes for one of
    ``wanted`` that holds another value (run as the login user: ~ is that user's home).

        >>> nccl_reads(Fresh({}, nccl_files=(("~/.nccl.conf", "A=2\\n"),)), {"A": "1"})
        ... # doctest: +NORMALIZE_WHITESPACE
        ({'A': '2'}, ["~/.nccl.conf:1 'A=2' is what NCCL takes for A, not '1': comment it out:
        sed -i '/^A=2$/s/^/# /' ~/.nccl.conf"])
    """
    read: dict[str, tuple[str, str, int, str]] = {}  # name: (value, path, number, line)
    for path, text in seen.nccl_files:
        lines = text.split("\n")
        for number, name, value in envfile.parse_nccl_conf(text):
            read.setdefault(name, (value, path, number, lines[number - 1]))
    removals = [byhand.line(path, number, line, f"is what NCCL takes for {name}, not "
                            f"{wanted[name]!r}")
                for name, (value, path, number, line) in read.items()
                if name in wanted and value != wanted[name]]
    return {name: value for name, (value, *_) in read.items()}, removals


def setting_lines(seen: Fresh, names: Sequence[str], *, login: bool = False) -> str:
    """By hand, each line of the SESSION_FILES (``login``: the LOGIN_FILES the login shell
    reads) that sets one of ``names``; where none does, the files to look in.

        >>> setting_lines(Fresh({}, files={"~/.pam_environment": "A DEFAULT=2"}), ["A"])
        ... # doctest: +NORMALIZE_WHITESPACE
        "~/.pam_environment:1 'A DEFAULT=2' sets A for a new SSH session too: comment it out:
        sed -i '/^A DEFAULT=2$/s/^/# /' ~/.pam_environment"
    """
    paths, reader = ((login_files(seen), "a login shell") if login else
                     (SESSION_FILES, "a new SSH session"))
    found = [_setting_line(path, number, seen.files[path].split("\n")[number - 1],
                           f"sets {name} for {reader} too", known, login)
             for path in paths if path in seen.files
             for number, name, known in _settings(seen.files[path], login) if name in names]
    return "; ".join(found) or f"none of {', '.join(paths)} sets them: find what does " + (
        "(a file one of them runs)" if login else "(a pam_env line of sshd's PAM stack with "
        "its own envfile=)")


def login_files(seen: Fresh) -> tuple[str, ...]:
    """The LOGIN_FILES the login user's shell reads: /etc/profile, then bash the first of
    ~/.bash_profile, ~/.bash_login and ~/.profile that is there, sh and dash ~/.profile;
    another shell, all of them (not knowing which it reads).

        >>> bash = {"SHELL": "/bin/bash"}
        >>> login_files(Fresh(bash, files={"~/.profile": "A=1", "~/.bash_login": ""}))
        ('/etc/profile', '~/.bash_login')
    """
    shell = seen.environment.get("SHELL", "").rpartition("/")[2]
    if shell == "bash":
        return LOGIN_FILES[0], *[path for path in LOGIN_FILES[1:] if path in seen.files][:1]
    if shell in ("sh", "dash"):
        return LOGIN_FILES[0], LOGIN_FILES[-1]
    return LOGIN_FILES


def _setting_line(path: str, number: int, text: str, why: str, known: bool, shell: bool
                  ) -> str:
    if not known:
        return byhand.manual(byhand.place(path, number, text), why,
                             "only running it tells what it sets")
    return byhand.line(path, number, text, why, syntax="shell" if shell else "pam_env")


def _settings(text: str, shell: bool) -> list[tuple[int, str, bool]]:
    """(number, name, whether its value can be told without running it) of each setting."""
    if shell:
        return [(number, name, value is not None)
                for number, name, value in envfile.parse_profile_sh(text)]
    return [(number, name, True) for number, name in envfile.session_settings(text)]


def _named(sections: Mapping[str, str], prefix: str) -> dict[str, list[str]]:
    return {name.removeprefix(prefix): _addresses(text) for name, text in sections.items()
            if name.startswith(prefix)}


def read_fresh(session: Session, node_subnet: str, names: Sequence[str] = ()) -> Fresh | str:
    """What a new session on the session's node sees, ``names`` resolved, or the error's text
    when it fails."""
    subnet = ipaddress.ip_network(node_subnet)
    family = "ahostsv6" if subnet.version == 6 else "ahostsv4"
    token = secrets.token_hex(8)
    try:
        output = session.run(("sh", "-c", _SCRIPT, "sh", token, family, *names), task="verify",
                             as_login=True).stdout
    except HostError as error:
        return str(error)
    return parse_fresh(output, token)


def cluster_names(sessions: Mapping[str, Session], gathered: Mapping[str, Facts | str]
                  ) -> list[str]:
    """The names every node must resolve: each inventory name, and each node's hostname and
    the FQDN it reports (what torch advertises for it), as facts checked them."""
    names = dict.fromkeys(sessions)
    for facts in gathered.values():
        if not isinstance(facts, str):
            short = facts.hostname.split(".")[0]
            names.update(dict.fromkeys(name for name in (short, facts.hostname, facts.fqdn)
                                       if name.lower().startswith(short.lower())))
    return list(names)


def read_all_fresh(names: Sequence[str], sessions: Mapping[str, Session],
                   gathered: Mapping[str, Facts | str],
                   forks: int = DEFAULT_FORKS) -> dict[str, Fresh | str]:
    """``read_fresh`` on the named nodes, ``forks`` at once, each over its open session; a
    node whose facts could not be read keeps that reason."""
    resolve = cluster_names(sessions, gathered)

    def one(name: str) -> Fresh | str:
        facts = gathered[name]
        if isinstance(facts, str):
            return facts
        session = sessions[name]
        return read_fresh(session, session.host.vars["node_subnet"], resolve)

    return dict(zip(names, raise_first(on_every(one, names, forks=forks)), strict=True))
