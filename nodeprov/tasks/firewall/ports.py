"""The ephemeral port range the firewall opens: the kernel's now, and the one the next boot sets.

NCCL and gloo listen on the kernel's ephemeral ports (net.ipv4.ip_local_port_range), so the
rules open the range the kernel has now. Where a sysctl file sets another range, the next boot
moves it outside the rules (a package's or a person's file: nodeprov does not own the range).
That is a Plan.conflict naming the file's line and the command that applies it now; the next
``apply`` then opens the range the node keeps::

    >>> boot_conflicts({"/etc/sysctl.d/99-ports.conf": "net.ipv4.ip_local_port_range=40000 50000"},
    ...                (32768, 60999))  # doctest: +NORMALIZE_WHITESPACE
    ["/etc/sysctl.d/99-ports.conf:1 sets net.ipv4.ip_local_port_range = 40000 50000, the range
    the next boot gives the kernel, which has 32768-60999 now, what the rules open: apply it
    now, then repair again: sysctl -w 'net.ipv4.ip_local_port_range=40000 50000'"]
"""

from __future__ import annotations

from collections.abc import Mapping

from nodeprov.tasks.textfiles import byhand, sysctl_conf

KEY = "net.ipv4.ip_local_port_range"


def boot_conflicts(found: Mapping[str, str | None], live: tuple[int, int]) -> list[str]:
    """The conflict where the sysctl files (``found``: sysctl_conf.BOOT_FILES read) set a
    range other than ``live`` for the next boot; none where no file sets it."""
    settings = sysctl_conf.boot_settings(found, KEY)
    if not settings:
        return []
    path, number, value = settings[-1]  # the last one applied wins
    if value.split() == [str(port) for port in live]:
        return []
    return [byhand.by_hand(f"{path}:{number} sets {KEY} = {value},",
                           f"the range the next boot gives the kernel, which has "
                           f"{live[0]}-{live[1]} now, what the rules open", byhand.APPLY_NOW,
                           ("sysctl", "-w", f"{KEY}={' '.join(value.split())}"))]
