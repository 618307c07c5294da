"""The inventory a testbed writes: nodeprov's Ansible-style YAML, ready for `nodeprov apply`.

    >>> parse_vars(["pip_find_links=[/opt/wheels]", "rdzv_port=29500"])
    {'pip_find_links': ['/opt/wheels'], 'rdzv_port': 29500}
    >>> from pathlib import Path
    >>> layout = Layout(Path("/srv/tb"))
    >>> inventory("10.77.3.0/24", layout, {"node1": "10.77.3.2"}, {})["all"]["hosts"]
    {'node1': {'ansible_host': '10.77.3.2'}}
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from nodeprov.errors import InputError
from nodeprov.testbed.layout import Layout

VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def parse_vars(assignments: Sequence[str]) -> dict[str, Any]:
    """``KEY=VALUE`` options into vars, each value parsed as YAML (``8`` is a number)."""
    parsed: dict[str, Any] = {}
    for assignment in assignments:
        key, equals, text = assignment.partition("=")
        if not equals or not VAR_NAME.match(key):
            raise InputError(f"{assignment!r} is not KEY=VALUE with KEY a variable name",
                             field="--var")
        try:
            parsed[key] = yaml.safe_load(text)
        except yaml.YAMLError as error:
            raise InputError(f"{key}: value {text!r} is not YAML: {error}", field="--var") from None
    return parsed


def inventory(subnet: str, layout: Layout, nodes: Mapping[str, str],
              extra_vars: Mapping[str, Any]) -> dict[str, Any]:
    """The inventory as data: testbed vars, then ``extra_vars``, which may not replace them."""
    testbed_vars = {
        "node_subnet": subnet,
        "ansible_user": "root",
        "ansible_ssh_private_key_file": str(layout.client_key),
        "ssh_config_file": str(layout.ssh_config),  # names the testbed's known_hosts
    }
    clashing = sorted(set(testbed_vars) & set(extra_vars))
    if clashing:
        raise InputError(f"{', '.join(clashing)} is set by the testbed itself", field="--var")
    return {"all": {"vars": {**testbed_vars, **extra_vars},
                    "hosts": {name: {"ansible_host": address} for name, address in nodes.items()}}}


def render(data: Mapping[str, Any], layout: Layout) -> str:
    header = (f"# written by `nodeprov testbed up`; removed by "
              f"`nodeprov testbed down --dir {layout.dir}`\n")
    return header + yaml.safe_dump(dict(data), sort_keys=False, default_flow_style=False)
