"""Nodes where ufw rules would not be the ones that filter, and the commands that open the
ports in what filters there instead::

    problem = refusal(facts, "10.0.0.0/24", 29500)   # None: ufw can do the job here

firewalld (the RHEL-family default) keeps dropping what ufw allows; Fedora's and EPEL's ufw
keep their rules in /var/lib/ufw (their spec moves them out of /etc/ufw), a layout nodeprov
does not manage: rules written to /etc/ufw would read back as in sync while ufw loads others.
"""

from __future__ import annotations

import ipaddress

from nodeprov.remote.facts import Facts

_RICH_RULE = ("firewall-cmd --permanent --add-rich-rule='rule family={} source address={} port "
              "port={} protocol=tcp accept'")


def refusal(facts: Facts, subnet: str, rdzv_port: int) -> str | None:
    """Why the firewall task must not use ufw on this node, with what to run; None if it may."""
    fedora = facts.ufw_rules_in_var_lib or (not facts.ufw_installed
                                            and facts.package_manager in ("dnf", "yum"))
    if not (facts.firewalld_active or fedora):
        return None
    why = ("firewalld is running: its zones would still drop the NCCL, gloo and rendezvous "
           "traffic ufw allows" if facts.firewalld_active else
           "this node's ufw is (or would be) Fedora's or EPEL's build, which keeps its rules in "
           "/var/lib/ufw: nodeprov does not manage that layout")
    low, high = facts.ephemeral_port_range
    family = f"ipv{ipaddress.ip_network(subnet).version}"
    opened = " && ".join([_RICH_RULE.format(family, subnet, f"{low}-{high}"),
                          _RICH_RULE.format(family, subnet, rdzv_port), "firewall-cmd --reload"])
    stop = ("" if fedora else "; or stop firewalld (systemctl disable --now firewalld) and "
            "re-run, for ufw")
    return (f"{why}. Open the ports in firewalld ({opened}) and set firewall_manage: false for "
            f"this node{stop}")
