"""ufw_files.py: user.rules and user6.rules rendered byte for byte as ufw wrote them."""

from __future__ import annotations

import pytest

from nodeprov.tasks.firewall import ufw, ufw_files
from tests.tasks.firewall.ufw_cases import section


@pytest.mark.parametrize("case", ["in-sync", "mixed-enabled", "ipv6-off", "logging-off",
                                  "logging-medium", "logging-high", "logging-full"])
def test_rule_files_render_as_ufw_wrote_them_at_every_log_level(case: str) -> None:
    level = ufw.parse_settings(section(case, ufw.CONF))["LOGLEVEL"]
    defaults = ufw.parse_settings(section(case, ufw.DEFAULTS))
    policies = {direction: ufw.POLICY_WORDS[defaults[f"DEFAULT_{chain}_POLICY"]]
                for direction, chain in zip(ufw_files.DIRECTIONS, ("INPUT", "OUTPUT", "FORWARD"),
                                            strict=True)}
    ipv6 = defaults["IPV6"] == "yes"
    for path, v6 in ((ufw.RULES, False), (ufw.RULES6, True)):
        rules = ufw_files.read_rules(section(case, path), v6=v6)
        assert rules is not None
        assert ufw_files.render_rules(rules, v6=v6, level=level if ipv6 or not v6 else None,
                                      policies=policies) == section(case, path)
