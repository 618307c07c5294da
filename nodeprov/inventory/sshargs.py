"""ssh command-line arguments (``ssh_args``, ``ssh_common_args``, ``ssh_extra_args`` and their
inventory variables) mapped onto what nodeprov's SSH does: the ProxyJump and ProxyCommand hops,
the port, the ssh_config file, and host-key checking with its known_hosts files. The rest is
returned as written, for a warning that names it (nodeprov's SSH is paramiko, not ssh).
As for ssh, the first value given for an option wins, and the first of ProxyJump and
ProxyCommand: it keeps the other from taking effect, ``none`` (no hop at all) included.

    >>> parsed = parse_ssh_args("-o ControlMaster=auto -J admin@bastion:2222 -p 2200")
    >>> parsed.jump, parsed.port, parsed.not_applied
    ('admin@bastion:2222', 2200, ('-o ControlMaster=auto',))
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from nodeprov.util import validate

# ssh's options that take an argument (ssh(1)); those nodeprov applies are -o -J -p -F
WITH_ARGUMENT = frozenset({"-b", "-B", "-c", "-D", "-E", "-e", "-F", "-I", "-i", "-J", "-L",
                           "-l", "-m", "-O", "-o", "-p", "-P", "-Q", "-R", "-S", "-W", "-w"})
APPLIED = ("-o", "-J", "-p", "-F")
STRICT_VALUES = {"yes": True, "ask": True, "no": False, "off": False, "accept-new": False}
_NAMES = {"proxyjump": "ProxyJump", "proxycommand": "ProxyCommand", "port": "Port",
          "configfile": "-F", "stricthostkeychecking": "StrictHostKeyChecking",
          "userknownhostsfile": "UserKnownHostsFile"}
_HOPS = {"proxyjump": "proxycommand", "proxycommand": "proxyjump"}  # each keeps the other out


@dataclass(frozen=True)
class SshArgs:
    jump: str | None = None  # ProxyJump spec, "[user@]host[:port][,...]" ("none": no hop)
    proxy_command: str | None = None  # ("none": no hop)
    port: int | None = None
    ssh_config_file: str | None = None  # -F
    # StrictHostKeyChecking: True refuses unknown keys; False trusts and records them
    strict_host_keys: bool | None = None
    known_hosts_files: tuple[str, ...] | None = None  # UserKnownHostsFile
    not_applied: tuple[str, ...] = ()


def first_of(parsed: Sequence[SshArgs]) -> SshArgs:
    """Several argument strings as one ssh command line reads them: the first value of each
    option wins (as ``ansible_ssh_args``, then the common, then the extra args).

    >>> first_of([parse_ssh_args("-p 2200"), parse_ssh_args("-p 22 -J b")]).port
    2200
    """
    def first(name: str) -> Any:
        return next((getattr(args, name) for args in parsed
                     if getattr(args, name) is not None), None)

    hops = hop_places(parsed)
    hop = parsed[hops[0]] if hops else SshArgs()
    return SshArgs(hop.jump, hop.proxy_command, first("port"),
                   first("ssh_config_file"), first("strict_host_keys"),
                   first("known_hosts_files"),
                   tuple(item for args in parsed for item in args.not_applied))


def hop_places(parsed: Sequence[SshArgs]) -> list[int]:
    """Which of ``parsed`` give a ProxyJump or ProxyCommand: the first one's applies, as ssh
    takes the first it reads; the others' are not applied.

    >>> hop_places([parse_ssh_args("-p 2"), parse_ssh_args("-J b"), parse_ssh_args("-J c")])
    [1, 2]
    """
    return [index for index, args in enumerate(parsed) if args.jump or args.proxy_command]


def hop_text(args: SshArgs) -> str:
    """The hop ``args`` give, as an ssh option."""
    return f"-o ProxyJump={args.jump}" if args.jump else f"-o ProxyCommand={args.proxy_command}"


def parse_ssh_args(text: str) -> SshArgs:
    """``text`` as ssh reads its arguments; ValueError names a value that cannot be used."""
    found: dict[str, str] = {}
    not_applied: list[str] = []
    words = shlex.split(text)
    index = 0
    while index < len(words):
        word = words[index]
        flag, attached = word[:2], word[2:]
        if flag in WITH_ARGUMENT and not attached and index + 1 < len(words):
            index += 1
            attached = words[index]
        if flag not in APPLIED or not attached:
            not_applied.append(f"{flag} {attached}" if flag in WITH_ARGUMENT and attached
                               and word == flag else word)
            index += 1
            continue
        key, value = _option(flag, attached)
        written = f"-o {attached}" if flag == "-o" else f"{flag} {attached}"
        if key in _HOPS and _HOPS[key] in found:  # the other hop came first: ssh ignores this
            not_applied.append(f"{written} ({_NAMES[_HOPS[key]]} came first)")
        elif key in _NAMES:
            found.setdefault(key, value)
        else:
            not_applied.append(written)
        index += 1
    return _checked(found, tuple(not_applied))


def _option(flag: str, text: str) -> tuple[str, str]:
    if flag == "-J":
        return "proxyjump", text
    if flag == "-p":
        return "port", text
    if flag == "-F":
        return "configfile", text
    key, _, value = text.replace("=", " ", 1).partition(" ")
    return key.strip().lower(), value.strip()


def _checked(found: dict[str, str], not_applied: tuple[str, ...]) -> SshArgs:
    def checked(key: str, check: Callable[[str], Any]) -> Any:
        if key not in found:
            return None
        try:
            return check(found[key])
        except ValueError as error:
            raise ValueError(f"{_NAMES[key]} {found[key]!r}: {error}") from None

    jump = checked("proxyjump", lambda spec: spec if spec.lower() == "none" else
                   check_jump(spec))
    files = checked("userknownhostsfile", lambda paths: tuple(
        validate.text_value(path) for path in paths.split()))
    return SshArgs(jump=jump, proxy_command=checked("proxycommand", _command),
                   port=checked("port", validate.port),
                   ssh_config_file=checked("configfile", validate.text_value),
                   strict_host_keys=checked("stricthostkeychecking", _strict),
                   known_hosts_files=files, not_applied=not_applied)


def _command(value: str) -> str:
    """A ProxyCommand: ``none`` (no hop, in any case, as ssh reads it) or a command."""
    if value.lower() == "none":
        return "none"
    if not value.strip():
        raise ValueError("expected a command, or none")
    return validate.text_value(value)


def _strict(value: str) -> bool:
    if value.lower() not in STRICT_VALUES:
        raise ValueError("expected yes, no, accept-new or ask")
    return STRICT_VALUES[value.lower()]


def check_jump(spec: str) -> str:
    """A ProxyJump value, ``[user@]host[:port][,...]``, every part checked.

    >>> check_jump("bastion,alice@10.0.0.1:2222")
    'bastion,alice@10.0.0.1:2222'
    """
    for hop in spec.split(","):
        hop = hop.strip().removeprefix("ssh://")
        user, at, rest = hop.rpartition("@")
        if at:
            validate.user_name(user)
        host, port = _host_port(rest)
        validate.address(host)
        if port is not None:
            validate.port(port)
    return spec


def _host_port(text: str) -> tuple[str, str | None]:
    if text.startswith("["):
        host, _, port = text[1:].partition("]")
        return host, port.removeprefix(":") or None
    host, colon, port = text.rpartition(":")
    return (host, port) if colon and host.count(":") == 0 else (text, None)
