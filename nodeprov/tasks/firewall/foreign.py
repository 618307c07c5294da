"""Nodes where nodeprov's ufw rules would not be the ones that filter, and the commands that
open the same ports in what filters there instead::

    problem = refusal(facts, "10.0.0.0/24", 29500, ufw_commands)   # None: ufw does the job

firewalld (the RHEL-family default) keeps dropping what ufw allows. Fedora's and EPEL's ufw
keep their rules in /var/lib/ufw (their spec moves them out of /etc/ufw), a layout nodeprov
does not manage: rules written to /etc/ufw would read back as in sync while ufw loads others.
The commands are for a person to run; nothing here runs them.
"""

from __future__ import annotations

import ipaddress
import shlex
from collections.abc import Sequence

from nodeprov.remote.facts import Facts

INSTALL_FIREWALLD = "dnf install -y firewalld && systemctl enable --now firewalld"


def refusal(facts: Facts, subnet: str, rdzv_port: int,
            ufw_commands: Sequence[Sequence[str]]) -> str | None:
    """Why the firewall task must not use ufw on this node, with what to run instead; None
    when it may. ``ufw_commands``: the ``ufw allow`` commands of the data ports."""
    fedora_ufw = facts.ufw_rules_in_var_lib
    epel_only = not facts.ufw_installed and facts.package_manager in ("dnf", "yum")
    then = "and set firewall_manage: false for this node"
    if facts.firewalld_active:
        ufw_way = "" if fedora_ufw or epel_only else (
            "; or stop firewalld (systemctl disable --now firewalld) and re-run, for ufw")
        return ("firewalld is running: its zones would still drop the NCCL, gloo and "
                "rendezvous traffic ufw allows. Open the ports in firewalld "
                f"({_firewalld(facts, subnet, rdzv_port)}) {then}{ufw_way}")
    if fedora_ufw:
        return ("this node's ufw is Fedora's or EPEL's build, which keeps its rules in "
                "/var/lib/ufw: nodeprov does not manage that layout. Add the rules with it "
                f"({' && '.join(shlex.join(argv) for argv in ufw_commands)}) {then}")
    if epel_only:
        return ("no firewall runs here, and ufw would come from EPEL, whose layout (rules in "
                "/var/lib/ufw) nodeprov does not manage. Install firewalld and open the ports "
                f"({INSTALL_FIREWALLD} && {_firewalld(facts, subnet, rdzv_port)}) {then} "
                "(without a firewall, the node accepts everything)")
    return None


def _firewalld(facts: Facts, subnet: str, rdzv_port: int) -> str:
    """firewall-cmd commands allowing tcp from ``subnet`` to the node's ephemeral range and
    ``rdzv_port``, in the zone of the interface that carries the subnet (else the default)."""
    low, high = facts.ephemeral_port_range
    family = f"ipv{ipaddress.ip_network(subnet).version}"
    carriers = [iface.name for iface in facts.interfaces_in(subnet)]
    zone = "firewall-cmd --get-default-zone"
    if carriers:
        zone = f"firewall-cmd --get-zone-of-interface={shlex.quote(carriers[0])} || {zone}"
    # $zone is the shell's: the only word left unquoted for it
    rules = ['firewall-cmd --permanent --zone="$zone" ' + shlex.quote(
        f"--add-rich-rule=rule family={family} source address={subnet} port port={ports} "
        "protocol=tcp accept") for ports in (f"{low}-{high}", str(rdzv_port))]
    return f"zone=$({zone}) && " + " && ".join([*rules, "firewall-cmd --reload"])
