"""The names each node gets in /etc/hosts: its inventory name always; what the node says of
itself (hostname, FQDN) only where it can redirect no one.

The inventory is the admin's word; a node's hostname is the node's own, and a node naming itself
``download.pytorch.org``, ``localhost`` or another node's name would draw that name's traffic
on every node. So a name a node reports is listed only

- as an RFC 1123 ASCII name that no resolver reads as an address, and not ``localhost`` & co.;
- for that node's own address, and on the other nodes only where no line of theirs maps it
  elsewhere (``hosts.plan``; the names the inventory owns, a host's name and ``name.domain``,
  and a node's own names on itself, displace such lines);
- when no other node reports it and no inventory host is named or addressed by it: then no
  node gets it, and the task fails on each node that reported it, naming the other;
- on the other nodes only where DNS, asked on the node itself (``Facts.hostname_in_dns``),
  does not already answer it with another address: that is another machine's name (the
  site's ``mirror``), which the node's own warning names, with the job's advice;
- with dots (an FQDN) only under ``domain`` (the inventory's ``hosts_domain``).

    names = cluster_names(ctx, previous_block_lines, domain="cluster.local")
    names.entries[0]   # Entry("10.0.0.11", ("node1.cluster.local", "node1"), frozenset(...))
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from nodeprov.util import validate

if TYPE_CHECKING:
    from nodeprov.remote.facts import Facts
    from nodeprov.tasks.base import Context

# what every /etc/hosts keeps for the machine itself (Debian's, Red Hat's and macOS's lines)
RESERVED = frozenset({"localhost", "localhost.localdomain", "localhost4",
                      "localhost4.localdomain4", "localhost6", "localhost6.localdomain6",
                      "ip6-localhost", "ip6-loopback", "ip6-localnet", "ip6-mcastprefix",
                      "ip6-allnodes", "ip6-allrouters", "ip6-allhosts", "broadcasthost"})


@dataclass(frozen=True)
class Entry:
    """One node's line: its address and names (FQDN first, so ``hostname -f`` answers it), and
    which of them only the node reported (lowercased; never its inventory name)."""

    address: str
    names: tuple[str, ...]
    reported: frozenset[str]
    host: str


@dataclass(frozen=True)
class ClusterNames:
    entries: tuple[Entry, ...]
    warnings: tuple[str, ...]
    refused: str  # why this node's own names cannot be listed; "" when they can


@dataclass(frozen=True)
class _Offer:
    host: str
    address: str
    names: tuple[tuple[str, str], ...]  # (name, what it is: "hostname", "FQDN", ...)


def cluster_names(ctx: Context, previous: Sequence[str], domain: str) -> ClusterNames:
    """Every inventory host's entry, in inventory order (``previous``: the block's lines now).

    An unreachable host keeps the names the block already had for its address, else only its
    inventory name: one node being down must not stop the others, nor make them forget names
    they resolved before; those names pass the same checks as reported ones.
    """
    known = {fields[0]: fields[1:] for fields in (line.split() for line in previous) if fields}
    offers: list[_Offer] = []
    warnings: list[str] = []
    refused = ""
    for name, (host, facts) in ctx.cluster.items():
        facts = ctx.facts if name == ctx.host.name else facts
        address = host.node_address or _listed_address(name, known)
        if not address:
            warnings.append(f"{name} is not listed: its address in node_subnet comes from the "
                            "node, which could not tell it (run again once it can)")
            continue
        if facts is None or not host.node_address:
            offered = [(listed, "name listed before") for listed in known.get(address, [])
                       if listed.lower() != name.lower()]
            shown = " ".join(_unique([*(n for n, _ in offered), name]))
            warnings.append(f"{name} is unreachable: listed as {shown} (run again once it is "
                            "up to list its own hostname)")
        else:
            offered = reported_names(facts)
        kept, problems = screened(name, offered, domain)
        owned = {owned.lower() for owned in _owned_names(name, domain)}  # always listed
        taken = {listed: other for listed, other in _named_elsewhere(facts, address, kept).items()
                 if listed.lower() not in owned}
        if taken and name == ctx.host.name:  # said once, by the node that reports it
            warnings += [f"{name} reports the {what} {listed!r}, which DNS resolves to "
                         f"{taken[listed]} (not {address}): listed on {name} only; a job "
                         f"whose peers reach {name} by {listed!r} goes there: set {name}'s "
                         f"hostname to its inventory name (hostnamectl set-hostname {name}), "
                         "or have the job use the inventory name" for listed, what in kept
                         if listed in taken]
        if name != ctx.host.name:
            kept = [(listed, what) for listed, what in kept if listed not in taken]
        if name == ctx.host.name and problems:
            hostname_problem = next((why for what, why in problems if what == "hostname"), "")
            refused = hostname_problem
            warnings += [why for what, why in problems if what != "hostname"]
        offers.append(_Offer(name, address, tuple(kept)))
    contested, why = _contested(offers, _inventory_names(ctx, domain), ctx.host.name)
    refused = refused or why
    entries = tuple(_entry(offer, contested, domain) for offer in offers)
    return ClusterNames(entries, tuple(warnings), refused)


def _entry(offer: _Offer, contested: set[str], domain: str) -> Entry:
    """An offer's line, its inventory name last. The names the inventory owns (its name, and
    ``name.domain`` where the node reports it) are the admin's word even where the node reports
    them: they always displace a line mapping them elsewhere, and are never left out for one."""
    names = _unique([*(n for n, _ in offer.names if n.lower() not in contested), offer.host])
    return Entry(offer.address, names, frozenset(n.lower() for n, _ in offer.names)
                 - {name.lower() for name in _owned_names(offer.host, domain)}, offer.host)


def _owned_names(host: str, domain: str) -> list[str]:
    """The names the inventory gives a host: its inventory name, after ``host.domain`` where
    ``domain`` is set and the name is a short one."""
    return [f"{host}.{domain}", host] if domain and "." not in host else [host]


def reported_names(facts: Facts) -> list[tuple[str, str]]:
    """The names a node gives itself: its FQDN (when it is one of its hostname), its hostname
    (a hostname with dots is an FQDN: its first label is the hostname too)."""
    hostname = facts.hostname
    short = hostname.split(".")[0]
    names = []
    # `hostname -f` answers "localhost" when the hostname sits on the 127.0.0.1 line: not a name
    if facts.fqdn.lower().startswith(f"{short.lower()}.") and facts.fqdn != hostname:
        names.append((facts.fqdn, "FQDN"))
    if "." in hostname:
        names.append((hostname, "FQDN"))
    names.append((short, "hostname"))
    return names


def screened(host: str, offered: Iterable[tuple[str, str]], domain: str
             ) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The names that may be listed, and (what, why) for each that may not."""
    kept, problems = [], []
    for name, what in offered:
        why = name_problem(name, domain)
        if why:
            problems.append((what, f"{host} reports the {what} {validate.printable(name)!r}, "
                                   f"which /etc/hosts does not list: {why}"))
        else:
            kept.append((name, what))
    return kept, problems


def name_problem(name: str, domain: str) -> str:
    """Why a name from a node may not be listed ("" when it may).

    >>> name_problem("download.pytorch.org", "cluster.local")
    "a name with dots is listed only under hosts_domain ('cluster.local')"
    """
    try:
        validate.hostname(name)
    except ValueError as error:
        return f"{error}; give the node a valid hostname (hostnamectl set-hostname)"
    lowered = name.lower()
    if lowered in RESERVED or lowered.endswith(".localhost") or lowered.startswith(
            "localhost."):
        return "it names this machine itself; give the node its own hostname"
    if "." in name and not (domain and lowered.endswith(f".{domain.lower()}")):
        where = f"hosts_domain ({domain!r})" if domain else "a domain set as hosts_domain"
        return f"a name with dots is listed only under {where}"
    return ""


def _contested(offers: Sequence[_Offer], inventory: Mapping[str, str], me: str
               ) -> tuple[set[str], str]:
    """The names (lowercased) reported by two hosts, or naming or addressing another inventory
    host; and why this host's task must fail ("" unless it reported one)."""
    claims: dict[str, list[tuple[str, str, str]]] = {}
    for offer in offers:
        for name, what in offer.names:
            claims.setdefault(name.lower(), []).append((offer.host, name, what))
    contested: set[str] = set()
    why = ""
    for lowered, claimants in claims.items():
        hosts = _unique(host for host, _, _ in claimants)
        owner = inventory.get(lowered)
        if owner is not None and hosts != (owner,):
            contested.add(lowered)
            mine = next((c for c in claimants if c[0] == me and me != owner), None)
            if mine and not why:
                why = (f"{me} reports the {mine[2]} {mine[1]!r}, which names the inventory host "
                       f"{owner}: listed for {owner} only; give {me} its own hostname "
                       "(hostnamectl set-hostname)")
        elif len(hosts) > 1:
            contested.add(lowered)
            mine = next((c for c in claimants if c[0] == me), None)
            if mine and not why:
                other = next(host for host in hosts if host != me)
                why = (f"{me} and {other} both report the {mine[2]} {mine[1]!r}: listed for "
                       "neither; give each node its own hostname (hostnamectl set-hostname)")
    return contested, why


def _named_elsewhere(facts: Facts | None, address: str, names: Sequence[tuple[str, str]]
                     ) -> dict[str, str]:
    """{name: the other address} for each reported name that DNS already answers with another
    address than the node's: another machine's name (the site's ``mirror``)."""
    if facts is None or not facts.hostname_in_dns:
        return {}
    other = [answer for answer in facts.hostname_in_dns if answer != address]
    hostname = facts.hostname.lower()
    return {name: ", ".join(other) for name, _ in names
            if other and address not in facts.hostname_in_dns and name.lower() == hostname}


def _inventory_names(ctx: Context, domain: str) -> dict[str, str]:
    """Inventory host names (and ``name.domain``), and ``ansible_host`` names, each to its host
    (lowercased)."""
    owners: dict[str, str] = {}
    for name, (host, _) in ctx.cluster.items():
        owners.update(dict.fromkeys((owned.lower() for owned in _owned_names(name, domain)
                                     if owned.lower() not in owners), name))
        if host.address and not _is_ip(host.address):
            owners.setdefault(host.address.lower(), name)
    return owners


def _is_ip(text: str) -> bool:
    try:
        validate.ip_address(text)
    except ValueError:
        return False
    return True


def _listed_address(name: str, known: Mapping[str, Sequence[str]]) -> str:
    """The address the block already lists ``name`` under: a node whose address only it can
    tell keeps its line while it is down."""
    return next((address for address, names in known.items() if name in names), "")


def _unique(names: Iterable[str]) -> tuple[str, ...]:
    seen: dict[str, str] = {}
    for name in names:
        seen.setdefault(name.lower(), name)
    return tuple(seen.values())

