"""``ipv6``: IPv6 on or off, live and after reboot, with ufw's ``IPV6=`` setting to match.

    - name: IPv6
      ipv6: {state: "{{ ipv6 }}"}

``net.ipv6.conf.{all,default}.disable_ipv6`` are set live (``sysctl -w``) and persisted in
``sysctl_file``, named to sort after the other sysctl.d files, since a reboot applies them in
order of their names (``sysctl --system`` and systemd-sysctl alike). procps' ``sysctl --system``
then reads /etc/sysctl.conf last, so a conflicting line there is commented out; a conflicting
line of a file that sorts after ours (a package's or a cloud image's) is a conflict naming it and
the ``sed`` that comments it out: turned off now, IPv6 would come back at the next boot.

ufw refuses to start with ``IPV6=yes`` while IPv6 is off, so this task owns the ``IPV6=`` line
of /etc/default/ufw (when ufw is installed) and reloads an active ufw after changing it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from nodeprov.remote import reader
from nodeprov.tasks.base import (
    Change,
    Context,
    Plan,
    Probe,
    Run,
    TaskFailed,
    TaskType,
    Write,
    checked,
)
from nodeprov.tasks.textfiles import blocks
from nodeprov.tasks.textfiles.sysctl_conf import (
    SYSCTL_CONF,
    boot_file,
    comment_out,
    overriding,
    probe_paths,
    proc_path,
)

KEYS = ("net.ipv6.conf.all.disable_ipv6", "net.ipv6.conf.default.disable_ipv6")
UFW_DEFAULTS = "/etc/default/ufw"
_UFW_IPV6 = re.compile(r"^IPV6=(.*)$", re.MULTILINE)


@dataclass(frozen=True)
class Ipv6Params:
    state: Literal["enabled", "disabled"] = "disabled"
    sysctl_file: str = "/etc/sysctl.d/99-zz-nodeprov-ipv6.conf"

    def __post_init__(self) -> None:
        checked("sysctl_file", boot_file, self.sysctl_file)


def probe(params: Ipv6Params) -> Probe:
    return reader.read_many_probe(*probe_paths(params.sysctl_file, KEYS), UFW_DEFAULTS)


def plan(ctx: Context, params: Ipv6Params, observed: str) -> Plan:
    found = reader.observed_files(observed)
    value = "1" if params.state == "disabled" else "0"
    live = {key: (found.get(proc_path(key)) or "").strip() for key in KEYS}
    notes = [f"IPv6 already {params.state}: disable_ipv6={value} live and in "
             f"{params.sysctl_file}"]
    if all(live.values()):
        changes = sysctl_changes(found, params, live, value)
    elif params.state == "disabled":
        changes, notes = [], ["this kernel has no IPv6 (booted with ipv6.disable=1): already off"]
    else:
        raise TaskFailed("this kernel has no IPv6 (booted with ipv6.disable=1?); remove that "
                         "from the kernel command line and reboot")
    ufw = ufw_ipv6_change(found.get(UFW_DEFAULTS), params.state, ctx.facts.ufw_active)
    changes += [ufw] if ufw else []
    if found.get(UFW_DEFAULTS) is not None:
        notes.append(f"ufw's IPV6= already says {'no' if value == '1' else 'yes'}")
    # a kernel without IPv6 keeps it off whatever a file says
    conflicts = overriding(found, params.sysctl_file, dict.fromkeys(KEYS, value), "IPv6") if (
        all(live.values())) else []
    if changes:
        return Plan.of(*changes, conflicts=conflicts)
    return Plan.noop(*notes, conflicts=conflicts)


def sysctl_changes(found: Mapping[str, str | None], params: Ipv6Params,
                   live: Mapping[str, str], value: str) -> list[Change]:
    """Persist ``value`` in our file, clear conflicts from /etc/sysctl.conf, set it live."""
    changes = []
    wanted = sysctl_text(params.state, value)
    old = found.get(params.sysctl_file)
    if old != wanted:
        changes.append(Change(f"persist IPv6 {params.state} in {params.sysctl_file}",
                              (Write(params.sysctl_file, wanted),),
                              diff=blocks.unified_diff(params.sysctl_file, old, wanted)))
    conf = found.get(SYSCTL_CONF)
    fixed = comment_out(conf or "", dict.fromkeys(KEYS, value))
    if conf is not None and fixed != conf:
        changes.append(Change(f"comment out the conflicting disable_ipv6 lines of {SYSCTL_CONF} "
                              "(read last at boot, it would win)", (Write(SYSCTL_CONF, fixed),),
                              diff=blocks.unified_diff(SYSCTL_CONF, conf, fixed)))
    stale = [f"{key}={value}" for key in KEYS if live[key] != value]
    if stale:
        verb = "disable" if params.state == "disabled" else "enable"
        changes.append(Change(f"{verb} IPv6 now: {', '.join(stale)}",
                              (Run(("sysctl", "-w", *stale)),)))
    return changes


def sysctl_text(state: str, value: str) -> str:
    return (f"# Written by nodeprov (ipv6: {state}); edits are overwritten.\n"
            + "".join(f"{key} = {value}\n" for key in KEYS))


def ufw_ipv6_change(text: str | None, state: str, ufw_active: bool) -> Change | None:
    """Set ufw's IPV6= to match ``state`` (reloading an active ufw); None when it does."""
    if text is None:
        return None
    wanted = "no" if state == "disabled" else "yes"
    current = [match.strip().strip("\"'").lower() for match in _UFW_IPV6.findall(text)]
    if current and all(setting == wanted for setting in current):
        return None
    if current:
        new = _UFW_IPV6.sub(f"IPV6={wanted}", text)
    else:
        new = text + ("" if not text or text.endswith("\n") else "\n") + f"IPV6={wanted}\n"
    actions: tuple[Write | Run, ...] = (Write(UFW_DEFAULTS, new),)
    if ufw_active:
        actions += (Run(("ufw", "reload")),)
    return Change(f"set IPV6={wanted} in {UFW_DEFAULTS}" + (" and reload ufw" if ufw_active
                                                           else ""),
                  actions, diff=blocks.unified_diff(UFW_DEFAULTS, text, new))


TASK = TaskType("ipv6", "Turn IPv6 on or off, live and after reboot, ufw included", Ipv6Params,
                probe, plan)
