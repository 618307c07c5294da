"""IPv6 is on or off as asked: live in the kernel, and in what a reboot will apply (nodeprov's
sysctl file, no /etc/sysctl.conf line or later sysctl.d file saying otherwise), with ufw's
IPV6= matching (ufw refuses to start with IPV6=yes while IPv6 is off)."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from nodeprov.checks import Drift
from nodeprov.files import observed_files
from nodeprov.tasks import ipv6
from nodeprov.tasks.base import Context

AREA = "ipv6"


def persisted(text: str | None) -> dict[str, str]:
    """The disable_ipv6 values a sysctl file sets, the last line winning.

        >>> persisted("net.ipv6.conf.all.disable_ipv6 = 1\\n# x\\n")
        {'net.ipv6.conf.all.disable_ipv6': '1'}
    """
    return {key: value for _index, key, value in ipv6.sysctl_settings(text or "")
            if key in ipv6.KEYS}


@pytest.fixture()
def found(observed: str) -> dict[str, str | None]:
    return observed_files(observed)


@pytest.fixture()
def value(params: ipv6.Ipv6Params) -> str:
    return "1" if params.state == "disabled" else "0"


def test_live(found: Mapping[str, str | None], params: ipv6.Ipv6Params, value: str,
              drift: Drift) -> None:
    live = {key: (found.get(ipv6.proc_path(key)) or "").strip() for key in ipv6.KEYS}
    if not all(live.values()):
        assert params.state == "disabled", drift.line(
            "the kernel has no IPv6 (booted with ipv6.disable=1?)", "IPv6 enabled")
        return
    wrong = [f"{key}={setting}" for key, setting in live.items() if setting != value]
    assert not wrong, drift.line(f"live {', '.join(wrong)}",
                                 f"IPv6 {params.state}: disable_ipv6={value}")


def test_persisted(found: Mapping[str, str | None], params: ipv6.Ipv6Params, value: str,
                   drift: Drift) -> None:
    settings = persisted(found.get(params.sysctl_file))
    wrong = [f"{key}={settings.get(key, 'unset')}" for key in ipv6.KEYS
             if settings.get(key) != value]
    assert not wrong, drift.line(f"{params.sysctl_file} has {', '.join(wrong)}",
                                 f"disable_ipv6={value} for reboots")


def test_sysctl_conf_agrees(found: Mapping[str, str | None], value: str, drift: Drift) -> None:
    settings = persisted(found.get(ipv6.SYSCTL_CONF))
    clashing = [f"{key} = {setting}" for key, setting in settings.items() if setting != value]
    assert not clashing, drift.line(
        f"{ipv6.SYSCTL_CONF}, applied last at boot, sets {', '.join(clashing)}",
        f"no disable_ipv6 line other than {value}")


def test_no_later_sysctl_file(found: Mapping[str, str | None], params: ipv6.Ipv6Params,
                              value: str, drift: Drift) -> None:
    later = ipv6.overriding_files(found, params.sysctl_file, value)
    # apply only warns about another package's file: removing that line is for a person
    assert not later, drift.line("; ".join(later), f"no file applied after "
                                 f"{params.sysctl_file} setting disable_ipv6 otherwise",
                                 f"on {drift.node}: edit the file named")


def test_ufw_ipv6_setting(found: Mapping[str, str | None], params: ipv6.Ipv6Params,
                          context: Context, drift: Drift) -> None:
    change = ipv6.ufw_ipv6_change(found.get(ipv6.UFW_DEFAULTS), params.state,
                                  context.facts.ufw_active)
    wanted = "no" if params.state == "disabled" else "yes"
    assert change is None, drift.line(f"{ipv6.UFW_DEFAULTS} does not say IPV6={wanted}",
                                      f"IPV6={wanted} with IPv6 {params.state}")
