"""NCCL and gloo see the node-subnet interface: a NEW SSH session (as the login user, no sudo,
as torchrun's launcher would open one) has the variables, a login shell too (/etc/profile.d
runs after pam_env), NCCL reads them from its files where the environment lacks them (the
first assignment of ~/.nccl.conf, then of /etc/nccl.conf: NVIDIA/nccl src/misc/param.cc), and
they select an interface that really holds a subnet address. The nccl_env task's plan checks
the files it writes; what each reader takes from them only the node can tell."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from nodeprov.checks import Drift
from nodeprov.checks.fresh import Fresh, nccl_reads, setting_lines
from nodeprov.inventory import Host
from nodeprov.remote.facts import Facts
from nodeprov.tasks import nccl_env
from nodeprov.tasks.base import Context, Plan, TaskFailed

AREA = "nccl_env"


def socket_interfaces(value: str, names: Sequence[str]) -> list[str]:
    """The interfaces a NCCL_SOCKET_IFNAME value selects: a comma list of prefixes, '=' for an
    exact name, a leading '^' to exclude instead (NCCL's ncclFindInterfaces rules).

        >>> socket_interfaces("=eth0", ["eth0", "eth01"]), socket_interfaces("^lo", ["lo", "e"])
        (['eth0'], ['e'])
    """
    exclude = value.startswith("^")
    exact = value.lstrip("^").startswith("=")
    patterns = [p for p in value.lstrip("^").lstrip("=").split(",") if p]

    def listed(name: str) -> bool:
        return any(name == p if exact else name.startswith(p) for p in patterns)

    return [name for name in names if listed(name) != exclude]


def wanted_variables(ifname: str, extra: Mapping[str, str], path: str) -> dict[str, str]:
    """{name: value} as ``path``'s reader takes the lines the nccl_env task writes there."""
    return nccl_env.block_values(path, nccl_env.wanted_blocks(ifname, extra)[path])


@pytest.fixture()
def ifname(params: nccl_env.NcclEnvParams, context: Context, drift: Drift) -> str:
    try:
        return nccl_env.socket_interface(context.facts, params)
    except TaskFailed as error:
        pytest.fail(drift.line(str(error), f"one interface with an address in {params.subnet}"),
                    pytrace=False)


def test_new_session_has_variables(fresh: Mapping[str, Fresh | str], node: Host,
                                   ifname: str, params: nccl_env.NcclEnvParams, plan: Plan,
                                   drift: Drift) -> None:
    seen = fresh[node.name]
    wanted = wanted_variables(ifname, params.extra, nccl_env.ENVIRONMENT)
    assert not isinstance(seen, str), drift.line(f"a new SSH session failed: {seen}",
                                                 _listed(wanted))
    wrong = _differing(seen.environment, wanted)
    assert not wrong, drift.effect_line(
        f"a new SSH session has {', '.join(wrong)}", _listed(wanted), plan, setting_lines(
            seen, [name for name, value in wanted.items() if seen.environment.get(name) != value]))


@pytest.mark.parametrize("variable", nccl_env.OWN_NAMES)
def test_interface_holds_subnet_address(fresh: Mapping[str, Fresh | str],
                                        node: Host, context: Context, variable: str,
                                        params: nccl_env.NcclEnvParams, plan: Plan,
                                        drift: Drift) -> None:
    seen = fresh[node.name]
    environment = seen if isinstance(seen, str) else seen.environment
    if isinstance(environment, str) or variable not in environment:
        pytest.skip(f"no {variable} in a new session (test_new_session_has_variables says so)")
    value = environment[variable]
    facts: Facts = context.facts
    names = [iface.name for iface in facts.interfaces]
    chosen = socket_interfaces(value, names) if variable.startswith("NCCL_") else (
        [name for name in value.split(",") if name in names])
    holding = {iface.name for iface in facts.interfaces_in(params.subnet)}
    wrong = [name for name in chosen if name not in holding]
    assert chosen and not wrong, drift.effect_line(
        f"{variable}={value} selects {', '.join(chosen) or 'no interface'}"
        + (f" ({', '.join(wrong)} without an address in {params.subnet})" if wrong else ""),
        f"{', '.join(sorted(holding)) or 'an interface'} holding an address in {params.subnet}",
        plan, f"set nccl_socket_ifname to an interface holding an address in {params.subnet}")


def test_login_shell_has_variables(fresh: Mapping[str, Fresh | str], node: Host, ifname: str,
                                   params: nccl_env.NcclEnvParams, plan: Plan,
                                   drift: Drift) -> None:
    seen = fresh[node.name]
    if isinstance(seen, str):
        pytest.skip("no new session (test_new_session_has_variables says why)")
    if not seen.login:  # a shell that prints no environment (nologin) logs no one in
        pytest.skip(f"{node.name}: the login user's shell printed no environment")
    wanted = wanted_variables(ifname, params.extra, nccl_env.ENVIRONMENT)
    wrong = _differing(seen.login, wanted)
    assert not wrong, drift.effect_line(
        f"a login shell has {', '.join(wrong)}", _listed(wanted), plan, setting_lines(
            seen, [name for name, value in wanted.items() if seen.login.get(name) != value],
            login=True))


def test_nccl_reads_them_from_its_files(fresh: Mapping[str, Fresh | str], node: Host,
                                        ifname: str, params: nccl_env.NcclEnvParams,
                                        plan: Plan, drift: Drift) -> None:
    seen = fresh[node.name]
    if isinstance(seen, str):
        pytest.skip("no new session (test_new_session_has_variables says why)")
    wanted = wanted_variables(ifname, params.extra, nccl_env.NCCL_CONF)
    taken, removals = nccl_reads(seen, wanted)
    wrong = _differing(taken, wanted)
    assert not wrong, drift.effect_line(
        f"NCCL reads {', '.join(wrong)} from its files", _listed(wanted), plan,
        "; ".join(removals) or "nccl.conf lacks them")


def _differing(seen: Mapping[str, str], wanted: Mapping[str, str]) -> list[str]:
    return [f"{name}={seen[name]}" if name in seen else f"{name} unset"
            for name, value in wanted.items() if seen.get(name) != value]


def _listed(wanted: Mapping[str, str]) -> str:
    return ", ".join(f"{name}={value}" for name, value in wanted.items())
