"""``sysctl``: kernel settings, live and after reboot, e.g. socket buffers for NCCL over TCP.

    - name: Socket buffers for NCCL
      sysctl:
        settings: {net.core.rmem_max: 67108864, net.ipv4.tcp_rmem: "4096 87380 67108864"}
      tags: [sysctl]

The settings are persisted in ``file`` (a .conf in /etc/sysctl.d) and set live with
``sysctl -w``, only the keys whose live value differs. A line of /etc/sysctl.conf setting one of
them otherwise is commented out (procps reads it last at boot: it would win); a line of a sysctl.d
file applied after ``file`` that does is a conflict, named with the ``sed`` that comments it
out: the task fails until it is gone, since the next boot would undo the setting. Write values
as the kernel prints them (67108864, not 64M), or every run finds them changed.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodeprov.remote import reader
from nodeprov.tasks.base import (
    Change,
    Context,
    ParamError,
    Plan,
    Probe,
    Run,
    TaskFailed,
    TaskType,
    Write,
    checked,
)
from nodeprov.tasks.textfiles import blocks, sysctl_conf


@dataclass(frozen=True)
class SysctlParams:
    settings: dict[str, str]
    file: str = "/etc/sysctl.d/90-nodeprov.conf"

    def __post_init__(self) -> None:
        checked("file", sysctl_conf.boot_file, self.file)
        if not self.settings:
            raise ParamError("settings", "no settings; give key: value pairs, e.g. "
                             "{net.core.rmem_max: 67108864}")
        for key, value in self.settings.items():
            checked("settings", sysctl_conf.key, key)
            checked("settings", sysctl_conf.value, value)

    @property
    def wanted(self) -> dict[str, str]:
        """{key: value} in key order, values without surrounding blanks."""
        return {key: self.settings[key].strip() for key in sorted(self.settings)}


def probe(params: SysctlParams) -> Probe:
    return reader.read_many_probe(*sysctl_conf.probe_paths(params.file, tuple(params.wanted)))


def plan(ctx: Context, params: SysctlParams, observed: str) -> Plan:
    found = reader.observed_files(observed)
    wanted = params.wanted
    live = {key: found.get(sysctl_conf.proc_path(key)) for key in wanted}
    unknown = [key for key, value in live.items() if value is None]
    if unknown:
        raise TaskFailed(f"no such sysctl on this kernel: {', '.join(unknown)} (nothing at "
                         f"{sysctl_conf.proc_path(unknown[0])}); check the name, or load the "
                         "kernel module that provides it")
    changes = []
    text = file_text(wanted)
    old = found.get(params.file)
    if old != text:
        changes.append(Change(f"persist {len(wanted)} sysctl setting(s) in {params.file}",
                              (Write(params.file, text),),
                              diff=blocks.unified_diff(params.file, old, text)))
    conf = found.get(sysctl_conf.SYSCTL_CONF)
    fixed = sysctl_conf.comment_out(conf or "", wanted)
    if conf is not None and fixed != conf:
        changes.append(Change(f"comment out the lines of {sysctl_conf.SYSCTL_CONF} setting them "
                              "otherwise (read last at boot, they would win)",
                              (Write(sysctl_conf.SYSCTL_CONF, fixed),),
                              diff=blocks.unified_diff(sysctl_conf.SYSCTL_CONF, conf, fixed)))
    stale = [f"{key}={value}" for key, value in wanted.items()
             if not sysctl_conf.same_value(live[key] or "", value)]
    if stale:
        changes.append(Change(f"set now: {', '.join(stale)}", (Run(("sysctl", "-w", *stale)),)))
    conflicts = sysctl_conf.overriding(found, params.file, wanted, "the setting")
    if changes:
        return Plan.of(*changes, conflicts=conflicts)
    return Plan.noop(f"{len(wanted)} sysctl setting(s) already live and in {params.file}",
                     conflicts=conflicts)


def file_text(wanted: dict[str, str]) -> str:
    return ("# Written by nodeprov (sysctl task); edits are overwritten.\n"
            + "".join(f"{key} = {value}\n" for key, value in wanted.items()))


TASK = TaskType("sysctl", "Kernel settings, live and persisted in /etc/sysctl.d", SysctlParams,
                probe, plan)
