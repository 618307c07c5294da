"""``firewall``: ufw on, deny incoming, SSH kept reachable, the data ports open to the subnet only.

    - name: Firewall
      firewall: {subnet: "{{ node_subnet }}", rdzv_port: "{{ rdzv_port }}",
                 ssh_port: "{{ ansible_port }}", ssh_allow_from: "{{ ssh_allow_from }}"}

From ``subnet`` only, TCP over the node's ephemeral port range (NCCL and gloo listen there) and
``rdzv_port`` (torchrun's c10d store, MASTER_PORT); SSH (TCP) from ``ssh_allow_from``. Our rules
carry a ``nodeprov: ...`` comment: missing ones are added, stale ones removed, the user's own
rules left alone. Enabling ufw, default policies and SSH rule removals run under a lockout
guard like iptables-apply: a detached process on the node runs ``ufw --force disable`` after
``revert_seconds`` unless a NEW SSH connection got through and the runner stopped it.

While ufw is inactive, its rule files and ufw.conf are written as ufw's command line would
leave them (``ufw_files``) and loaded by ``ufw-init start``, what the boot service runs: a
quarter of the CPU of ``ufw allow`` x 3 and ``ufw enable`` (Python). Once ufw is active its
command line changes the rules, live chains included.

A node where ufw cannot do the job (firewalld, Fedora's ufw: ``foreign``) is refused with the
commands for its own firewall; ``manage`` false leaves a node to that tool.

/etc/default/ufw's IPV6= line belongs to the ipv6 task; this task only reads it.

Beside the task: ``ufw`` (rules and settings as values, and the commands rendered from them),
``ufw_files`` (ufw's own files), ``guard`` (the changes through nodeside/ufw-helper.sh, and
the lockout guard), ``foreign`` (the firewalls ufw cannot replace).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass

from nodeprov.remote import reader
from nodeprov.remote.facts import Facts
from nodeprov.remote.nodelock import STATE_DIR
from nodeprov.tasks.base import (
    Change,
    Context,
    ParamError,
    Plan,
    Probe,
    TaskFailed,
    TaskType,
    Write,
    checked,
)
from nodeprov.tasks.firewall import foreign, order, ports, ufw, ufw_files
from nodeprov.tasks.firewall.guard import (
    Step,
    disarm_left_guard,
    guard_change,
    helper_change,
)
from nodeprov.tasks.firewall.ufw import Rule
from nodeprov.tasks.textfiles import sysctl_conf
from nodeprov.util import validate

SSH, NCCL, RDZV = "nodeprov: ssh", "nodeprov: nccl ephemeral", "nodeprov: rdzv"
UNPRIVILEGED = 1024  # the kernel's ip_unprivileged_port_start default
REVERTED = f"{STATE_DIR}/ufw-reverted"
GUARD_PID = f"{STATE_DIR}/ufw-guard.pid"
# argv: guard_pidfile, then nodeprov_read's. First a line with the pid of a lockout guard still
# waiting to revert (one a killed run left armed), if any, then the files. `read` drops
# cmdline's NUL separators: "sh/var/lib/nodeprov/ufw-helper.shrevert30".
_READ_ALL = reader.READER + r"""guard=$1; shift
pid='' cmdline=''
[ ! -e "$guard" ] || read -r pid < "$guard"
case $pid in
  '' | *[!0-9]*) pid= ;;
  *) [ ! -e "/proc/$pid/cmdline" ] || read -r cmdline < "/proc/$pid/cmdline" ;;
esac
case $cmdline in *ufw-helper.sh*revert*) ;; *) pid= ;; esac
printf '%s\n' "$pid"
nodeprov_read "$@"
"""
_INSTALL = {
    "apt-get": ("env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "-q", "ufw"),
    "dnf": ("dnf", "install", "-y", "ufw"),
    "yum": ("yum", "install", "-y", "ufw"),
    "zypper": ("zypper", "--non-interactive", "install", "ufw"),
}


@dataclass(frozen=True)
class FirewallParams:
    subnet: str
    rdzv_port: int = 29500
    ssh_port: int | None = None  # default: the port nodeprov connects on
    ssh_allow_from: str = "any"
    revert_seconds: int = 30
    manage: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "subnet", checked("subnet", validate.cidr, self.subnet))
        checked("rdzv_port", validate.port, self.rdzv_port)
        if self.ssh_port is not None:
            checked("ssh_port", validate.port, self.ssh_port)
        if self.ssh_allow_from != "any":
            object.__setattr__(self, "ssh_allow_from",
                               checked("ssh_allow_from", validate.cidr, self.ssh_allow_from))
        if not 5 <= self.revert_seconds <= 3600:
            raise ParamError("revert_seconds", f"{self.revert_seconds} is not 5 to 3600 seconds "
                             "(the guard must outlast enabling ufw and a new SSH connection)")


def probe(params: FirewallParams) -> Probe:
    return Probe(("sh", "-c", _READ_ALL, "nodeprov-ufw", GUARD_PID,
                  *reader.read_args(*ufw.FILES, REVERTED, *sysctl_conf.BOOT_FILES)))


@dataclass(frozen=True)
class Observed:
    """What the probe saw: ufw's state, when the guard last reverted, the pid of a guard that
    still waits to revert (a killed run left it armed), and ufw's files ({path: text or None})."""

    state: ufw.State
    reverted_at: str | None
    armed_guard: str | None
    texts: Mapping[str, str | None]


def read_state(observed: str, facts: Facts) -> Observed:
    """The probe's output and the facts, read."""
    guard, _, read = observed.partition("\n")
    texts = reader.observed_files(read, unreadable=None)
    reverted = texts.pop(REVERTED, None)
    state = ufw.parse_state(texts, installed=facts.ufw_installed, active=facts.ufw_active)
    return Observed(state, reverted.strip() if reverted else None, guard.strip() or None, texts)


def wanted_rules(ctx: Context, params: FirewallParams, ipv6: bool) -> list[Rule]:
    """Our rules, SSH first: they are added in this order, before ufw is enabled."""
    low, high = ctx.facts.ephemeral_port_range
    if low < UNPRIVILEGED:  # the kernel takes such a range only with ip_unprivileged_port_start
        raise TaskFailed(f"the node's ephemeral port range {low}-{high} reaches below "
                         f"{UNPRIVILEGED}, the privileged ports (SSH's among them), which "
                         "nodeprov does not open to the subnet: set net.ipv4."
                         "ip_local_port_range to e.g. '32768 60999' (the default) and re-run")
    ssh_port = _ssh_port(ctx, params)
    return [*_allow(params.ssh_allow_from, str(ssh_port), SSH, ipv6),
            *(rule for ports in ufw.port_ranges(low, high, without=ssh_port)
              for rule in _allow(params.subnet, ports, NCCL, ipv6)),
            *_allow(params.subnet, str(params.rdzv_port), RDZV, ipv6)]


def plan(ctx: Context, params: FirewallParams, observed: str) -> Plan:
    if not params.manage:
        return Plan.noop("firewall left to the node's own tool (firewall_manage: false); the "
                         "connectivity matrix checks the ports")
    seen = read_state(observed, ctx.facts)
    state = seen.state
    wanted = wanted_rules(ctx, params, state.ipv6)
    refused = foreign.refusal(ctx.facts, params.subnet, params.rdzv_port,
                              [ufw.add_argv(r) for r in wanted if r.comment != SSH])
    if refused:
        raise TaskFailed(refused)
    users = {r.match: r for r in state.rules if not _ours(r) and r.action in ("allow", "limit")}
    missing = [r for r in wanted if r not in state.rules and r.match not in users]
    notes = [f"ufw rule already present: {r.brief}" if r in state.rules else
             f"ufw rule present as the user's own: {users[r.match].brief}"
             for r in wanted if r not in missing]
    replaced = {r.match for r in missing}  # ufw's add updates a rule matching the same traffic
    stale = [r for r in state.rules if _ours(r) and r not in wanted and r.match not in replaced]
    ssh_port = str(_ssh_port(ctx, params))
    risky = [r for r in stale if r.comment == SSH or r.port == ssh_port]
    others = [r for r in stale if r not in risky]
    ssh = f"tcp/{ssh_port} from {params.ssh_allow_from}"  # what a new connection must pass
    warnings = [f"the lockout guard disabled ufw at {seen.reverted_at} after an unconfirmed "
                "change: check ssh_port and ssh_allow_from"
                ] if seen.reverted_at and not state.active else []
    loaded = _load_files(seen, missing, others, risky, params.revert_seconds, ssh) if (
        state.installed and not state.active) else None
    # the user's rules above ours, and a range the next boot moves: theirs to change
    conflicts = (*(order.conflict(*found) for found in order.blocking(state.rules, wanted)),
                 *ports.boot_conflicts(seen.texts, ctx.facts.ephemeral_port_range))
    if loaded:
        return Plan((loaded,), tuple(notes), tuple(warnings), conflicts)

    changes = [_install(ctx.facts)] if not state.installed else []
    if missing:
        changes.append(helper_change(f"add ufw rule(s): {_specs(missing)}",
                                     dict.fromkeys(ufw.add_argv(r) for r in missing),
                                     _diff("+", missing)))
    if others:
        changes.append(helper_change(f"remove stale nodeprov ufw rule(s): {_specs(others)}",
                                     [ufw.delete_argv(r) for r in others], _diff("-", others)))
    guarded = _guarded(state, risky, params.revert_seconds, ssh)
    if guarded:
        changes.append(guarded)  # arming stops a guard left armed first
    else:
        notes.append("ufw active: default deny incoming, allow outgoing")
        if seen.armed_guard:
            changes.append(disarm_left_guard(seen.armed_guard, ssh))
    return Plan(tuple(changes), tuple(notes), tuple(warnings), conflicts)


def _load_files(seen: Observed, missing: list[Rule], others: list[Rule], risky: list[Rule],
                seconds: int, ssh: str) -> Change | None:
    """ufw inactive: write its files as ``ufw allow``, ``delete`` and ``enable`` would, then
    load them with ufw-init, under the guard; None where only ufw can (a rule file in an
    older format, which ufw rewrites)."""
    state = seen.state
    texts = ufw_files.enabled(seen.texts, ipv6=state.ipv6, add=missing, remove=[*others, *risky],
                              incoming="DROP", outgoing="ACCEPT")
    if texts is None:
        return None
    conf = texts.pop(ufw.CONF, None)
    policies = _policies(state)
    parts = [*([f"add ufw rule(s): {_specs(missing)}"] if missing else []),
             *([f"remove stale nodeprov ufw rule(s): {_specs(others)}"] if others else []),
             *(f"remove SSH rule {r.brief}" for r in risky), *(p for _, p, _ in policies),
             "enable ufw"]
    diff = (_diff("+", missing) + _diff("-", others) + _diff("-", risky)
            + "".join(line for *_, line in policies) + _enabling(state))
    # the files change nothing live while ufw is inactive: ufw-init loads them, guarded; `ufw
    # default` edits after.rules too, so ufw does that itself
    before: list[Step] = [("need-ip6tables",)] if state.ipv6 else []
    before += [Write(path, text) for path, text in texts.items()]
    steps: list[Step] = [argv for argv, _, _ in policies]
    steps += [*([Write(ufw.CONF, conf)] if conf else []), ("start",)]
    return guard_change(parts, before, steps, diff, seconds, ssh)


def _guarded(state: ufw.State, risky: list[Rule], seconds: int, ssh: str) -> Change | None:
    """What can lock us out, run between arming the guard and confirming a new connection."""
    policies = _policies(state)
    steps = [*(ufw.delete_argv(r) for r in risky), *(argv for argv, _, _ in policies)]
    parts = [*(f"remove SSH rule {r.brief}" for r in risky), *(p for _, p, _ in policies)]
    diff = _diff("-", risky) + "".join(line for *_, line in policies)
    if not state.active:
        steps.append(("ufw", "--force", "enable"))
        parts.append("enable ufw")
        diff += _enabling(state)
    return guard_change(parts, [], steps, diff, seconds, ssh) if steps else None


def _policies(state: ufw.State) -> list[tuple[tuple[str, ...], str, str]]:
    """The default policies to set: (the ufw command, what it does, its diff line)."""
    found: list[tuple[tuple[str, ...], str, str]] = []
    for direction, current, policy in (("incoming", state.incoming, "DROP"),
                                       ("outgoing", state.outgoing, "ACCEPT")):
        if current != policy:
            word = ufw.POLICY_WORDS[policy]
            found.append((("ufw", "default", word, direction), f"default {word} {direction}",
                          f"~ default {direction}: {ufw.POLICY_WORDS.get(current, current)} -> "
                          f"{word}\n"))
    return found


def _enabling(state: ufw.State) -> str:
    was = "enabled but not loaded" if state.enabled_at_boot else "inactive"
    return f"~ ufw: {was} -> active\n"


def _specs(rules: list[Rule]) -> str:
    """The rules as ufw's words, once each: an IPv6 twin is added and removed with its rule."""
    return ", ".join(dict.fromkeys(map(ufw.spec, rules)))


def _install(facts: Facts) -> Change:
    argv = _INSTALL.get(facts.package_manager or "")
    if argv is None:
        raise TaskFailed("ufw is not installed and this node has no apt-get, dnf, yum or "
                         "zypper: install ufw by hand, then re-run")
    return helper_change(f"install ufw with {facts.package_manager}", [("install", *argv)],
                         "+ package ufw\n")


def _allow(source: str, port: str, comment: str, ipv6: bool) -> list[Rule]:
    if source == "any":
        rule = Rule("allow", "tcp", port, ufw.ANY_V4, comment=comment)
        return [rule, ufw.anywhere_twin(rule)] if ipv6 else [rule]
    v6 = ipaddress.ip_network(source).version == 6
    if v6 and not ipv6:
        raise TaskFailed(f"{source} is an IPv6 network but ufw's IPv6 is off (IPV6=no in "
                         "/etc/default/ufw, or no IPv6 in the kernel)")
    anywhere = ufw.ANY_V6 if v6 else ufw.ANY_V4
    return [Rule("allow", "tcp", port, source, dst=anywhere, comment=comment, v6=v6)]


def _ssh_port(ctx: Context, params: FirewallParams) -> int:
    return params.ssh_port if params.ssh_port is not None else ctx.host.port or 22


def _ours(rule: Rule) -> bool:
    return rule.comment.startswith("nodeprov:")


def _diff(sign: str, rules: list[Rule]) -> str:
    return "".join(f"{sign} {rule}\n" for rule in rules)


TASK = TaskType("firewall", "ufw: deny incoming, SSH kept reachable, NCCL/rdzv ports from the "
                "node subnet only", FirewallParams, probe, plan)
