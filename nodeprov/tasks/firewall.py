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

/etc/default/ufw's IPV6= line belongs to the ipv6 task; this task only reads it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from nodeprov import ufw, validate
from nodeprov.facts import Facts, split_sections
from nodeprov.files import ABSENT
from nodeprov.session import STATE_DIR
from nodeprov.tasks.base import (
    Action,
    Change,
    ConfirmNewConnection,
    Context,
    ParamError,
    Plan,
    Probe,
    Run,
    TaskFailed,
    TaskType,
    Write,
)
from nodeprov.ufw import Rule

SSH, NCCL, RDZV = "nodeprov: ssh", "nodeprov: nccl ephemeral", "nodeprov: rdzv"
HELPER = f"{STATE_DIR}/ufw-helper.sh"
REVERTED = f"{STATE_DIR}/ufw-reverted"
GUARD_PID = f"{STATE_DIR}/ufw-guard.pid"
# argv: absent guard_pidfile files... Each file's text, then, under the pid file's name, the pid
# of a lockout guard still waiting to revert (one a killed run left armed), if any.
_READ_ALL = r"""absent=$1; guard=$2; shift 2
for path in "$@"; do
  printf '\n@@ufw %s\n' "$path"; cat -- "$path" 2>/dev/null || echo "$absent"
done
printf '\n@@ufw %s\n' "$guard"
pid=$(cat -- "$guard" 2>/dev/null) &&
  tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q 'ufw-helper.sh revert' && echo "$pid"
true
"""
_INSTALL = {
    "apt-get": ("env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "-q", "ufw"),
    "dnf": ("dnf", "install", "-y", "ufw"),
    "yum": ("yum", "install", "-y", "ufw"),
    "zypper": ("zypper", "--non-interactive", "install", "ufw"),
}
# Every command runs on the node as `sh ufw-helper.sh ...`: a failure reads as that command and
# ends with a line saying what to check.
HELPER_SCRIPT = r"""# nodeprov's ufw helper (firewall task): sh ufw-helper.sh COMMAND [ARGS]
#   ufw ARGS..      run ufw; when it fails on ip6tables, say how IPv6 is set
#   install ARGV..  run the package manager; when it fails, say what to check
#   arm SECONDS     start the lockout guard: 'ufw --force disable' after SECONDS
#   disarm SSH      stop the guard; fails, naming the SSH rule, if it already disabled ufw
dir=$(dirname -- "$0"); pidfile=$dir/ufw-guard.pid; reverted=$dir/ufw-reverted
stop_guard() {
  pid=$(cat -- "$pidfile" 2>/dev/null) || return 1
  rm -f -- "$pidfile"
  # the pid may belong to another process by now: kill only our own revert
  tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q 'ufw-helper.sh revert' || return 1
  kill -TERM "-$pid"
}
case $1 in
ufw) output=$("$@" 2>&1); status=$?; printf '%s\n' "$output" >&2
  [ "$status" = 0 ] && exit 0
  case $output in *ip6tables*)
    off=$(cat /proc/sys/net/ipv6/conf/all/disable_ipv6 2>/dev/null)
    echo "ufw's IPv6 rules failed: disable_ipv6=$off, $(grep -s '^IPV6=' /etc/default/ufw) in" \
      "/etc/default/ufw; with IPv6 off set IPV6=no (the ipv6 task does)" >&2 ;;
  esac; exit "$status" ;;
install) shift; "$@" && exit 0
  echo "cannot install ufw: is the node offline, or its package index stale? Install ufw" \
    "on it by hand, then re-run" >&2; exit 1 ;;
arm) stop_guard; rm -f -- "$reverted"
  setsid sh -- "$0" revert "$2" </dev/null >/dev/null 2>&1 &
  i=0; while [ ! -s "$pidfile" ] && [ "$i" -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
  [ -s "$pidfile" ] || { echo "the lockout guard did not start" >&2; exit 1; } ;;
revert)
  # the runner's flock lock (fd 3) must not live on here: it would block the next round trip
  exec 3>&- 4>&- 5>&- 6>&- 7>&- 8>&- 9>&-
  trap '' HUP; echo $$ > "$pidfile"; sleep "$2"
  # the mark first: a disarm racing with the revert must see it; then finish whatever comes
  date > "$reverted"; trap '' TERM; rm -f -- "$pidfile"; ufw --force disable ;;
disarm) stop_guard
  [ -e "$reverted" ] || exit 0
  echo "the lockout guard disabled ufw at $(cat -- "$reverted") before a new SSH connection" \
    "got through: does SSH on $2 admit nodeprov? (on a slow node raise revert_seconds)" >&2
  exit 1 ;;
esac
"""


@dataclass(frozen=True)
class FirewallParams:
    subnet: str
    rdzv_port: int = 29500
    ssh_port: int | None = None  # default: the port nodeprov connects on
    ssh_allow_from: str = "any"
    revert_seconds: int = 30

    def __post_init__(self) -> None:
        object.__setattr__(self, "subnet", _check("subnet", validate.cidr, self.subnet))
        _check("rdzv_port", validate.port, self.rdzv_port)
        if self.ssh_port is not None:
            _check("ssh_port", validate.port, self.ssh_port)
        if self.ssh_allow_from != "any":
            object.__setattr__(self, "ssh_allow_from",
                               _check("ssh_allow_from", validate.cidr, self.ssh_allow_from))
        if not 5 <= self.revert_seconds <= 3600:
            raise ParamError("revert_seconds", f"{self.revert_seconds} is not 5 to 3600 seconds "
                             "(the guard must outlast enabling ufw and a new SSH connection)")


def probe(params: FirewallParams) -> Probe:
    return Probe(("sh", "-c", _READ_ALL, "nodeprov-ufw", ABSENT, GUARD_PID, *ufw.FILES,
                  REVERTED))


@dataclass(frozen=True)
class Observed:
    """What the probe saw: ufw's state, when the guard last reverted, the pid of a guard that
    still waits to revert (a killed run left it armed)."""

    state: ufw.State
    reverted_at: str | None
    armed_guard: str | None


def read_state(observed: str, facts: Facts) -> Observed:
    """The probe's output and the facts, read."""
    texts = {path: None if text.strip() == ABSENT else text
             for path, text in split_sections(observed, "ufw").items()}
    reverted, guard = texts.pop(REVERTED, None), texts.pop(GUARD_PID, None)
    state = ufw.parse_state(texts, installed=facts.ufw_installed, active=facts.ufw_active)
    return Observed(state, reverted.strip() if reverted else None,
                    guard.strip() if guard and guard.strip() else None)


def wanted_rules(ctx: Context, params: FirewallParams, ipv6: bool) -> list[Rule]:
    """Our rules, SSH first: they are added in this order, before ufw is enabled."""
    low, high = ctx.facts.ephemeral_port_range
    return [*_allow(params.ssh_allow_from, str(_ssh_port(ctx, params)), SSH, ipv6),
            *_allow(params.subnet, f"{low}:{high}", NCCL, ipv6),
            *_allow(params.subnet, str(params.rdzv_port), RDZV, ipv6)]


def plan(ctx: Context, params: FirewallParams, observed: str) -> Plan:
    seen = read_state(observed, ctx.facts)
    state = seen.state
    wanted = wanted_rules(ctx, params, state.ipv6)
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

    changes = [_install(ctx.facts)] if not state.installed else []
    if missing:
        adds = dict.fromkeys(ufw.add_argv(r) for r in missing)  # "any" adds the IPv6 twin too
        changes.append(_change(f"add {len(adds)} ufw rule(s)", adds, _diff("+", missing)))
    if others:
        changes.append(_change(f"remove {len(others)} stale nodeprov ufw rule(s)",
                               [ufw.delete_argv(r) for r in others], _diff("-", others)))
    ssh = f"tcp/{ssh_port} from {params.ssh_allow_from}"  # what a new connection must pass
    guarded = _guarded(state, risky, params.revert_seconds, ssh)
    if guarded:
        changes.append(guarded)  # arming stops a guard left armed first
    else:
        notes.append("ufw active: default deny incoming, allow outgoing")
        if seen.armed_guard:
            changes.append(_disarm_left_guard(seen.armed_guard, ssh))
    warnings = [f"the lockout guard disabled ufw at {seen.reverted_at} after an unconfirmed "
                "change: check ssh_port and ssh_allow_from"
                ] if seen.reverted_at and not state.active else []
    return Plan(tuple(changes), tuple(notes), tuple(warnings))


def _guarded(state: ufw.State, risky: list[Rule], seconds: int, ssh: str) -> Change | None:
    """What can lock us out, run between arming the guard and confirming a new connection."""
    steps = [ufw.delete_argv(r) for r in risky]
    parts, diff = [f"remove SSH rule {r.brief}" for r in risky], _diff("-", risky)
    for direction, current, policy in (("incoming", state.incoming, "DROP"),
                                       ("outgoing", state.outgoing, "ACCEPT")):
        if current != policy:
            word = ufw.POLICY_WORDS[policy]
            steps.append(("ufw", "default", word, direction))
            parts.append(f"default {word} {direction}")
            diff += f"~ default {direction}: {ufw.POLICY_WORDS.get(current, current)} -> {word}\n"
    if not state.active:
        steps.append(("ufw", "--force", "enable"))
        parts.append("enable ufw")
        was = "enabled but not loaded" if state.enabled_at_boot else "inactive"
        diff += f"~ ufw: {was} -> active\n"
    if not steps:
        return None
    what = "; ".join(parts)
    confirm = ConfirmNewConnection(f"{what}, SSH allowed on {ssh}")
    return _change(f"{what} (reverted in {seconds}s unless a new SSH connection works)",
                   [("arm", str(seconds)), *steps, confirm, ("disarm", ssh)], diff)


def _disarm_left_guard(pid: str, ssh: str) -> Change:
    """A run killed between enabling ufw and disarming left its guard waiting to disable ufw:
    disarm it, once a new connection shows that what the killed run did lets SSH in."""
    confirm = ConfirmNewConnection(f"the rules a killed run left, SSH allowed on {ssh}")
    return _change(f"disarm the lockout guard an interrupted run left armed (pid {pid})",
                   [confirm, ("disarm", ssh)], f"~ lockout guard (pid {pid}): armed -> disarmed\n")


def _install(facts: Facts) -> Change:
    argv = _INSTALL.get(facts.package_manager or "")
    if argv is None:
        raise TaskFailed("ufw is not installed and this node has no apt-get, dnf, yum or "
                         "zypper: install ufw by hand, then re-run")
    return _change(f"install ufw with {facts.package_manager}", [("install", *argv)],
                   "+ package ufw\n")


def _change(summary: str, steps: Iterable[tuple[str, ...] | ConfirmNewConnection],
            diff: str) -> Change:
    """A change whose commands run through the helper script, written first (it is tiny)."""
    actions: list[Action] = [Write(HELPER, HELPER_SCRIPT)]
    actions += [Run(("sh", HELPER, *step)) if isinstance(step, tuple) else step for step in steps]
    return Change(summary, tuple(actions), diff)


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
    return params.ssh_port if params.ssh_port is not None else ctx.host.port


def _ours(rule: Rule) -> bool:
    return rule.comment.startswith("nodeprov:")


def _diff(sign: str, rules: list[Rule]) -> str:
    return "".join(f"{sign} {rule}\n" for rule in rules)


def _check(field: str, check: Callable[[Any], Any], value: Any) -> Any:
    try:
        return check(value)
    except ValueError as error:
        raise ParamError(field, str(error)) from None


TASK = TaskType("firewall", "ufw: deny incoming, SSH kept reachable, NCCL/rdzv ports from the "
                "node subnet only", FirewallParams, probe, plan)
