"""The table of settings nodeprov reads (nodeprov.config.definitions) against ansible-core's own
definitions: lib/ansible/config/base.yml for the base settings, and the DOCUMENTATION of the
``ssh`` connection and ``sudo`` become plugins for theirs: the same INI entries, environment
variables and types, in the same order (the later one wins)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from nodeprov.config.definitions import DEFINITIONS, Definition

KINDS = {"boolean": "bool", "bool": "bool", "integer": "int", "int": "int", "path": "path",
         "pathlist": "pathlist", "list": "list", "string": None, "str": None, None: None}


def _ansible_definition(definition: Definition) -> dict[str, Any]:
    config = pytest.importorskip("ansible.config.manager")
    if not definition.plugin:
        base = config.ConfigManager()._base_defs  # the parsed base.yml
        found: dict[str, Any] = base[definition.ansible]
        return found
    module = {"ssh": "ansible.plugins.connection.ssh",
              "sudo": "ansible.plugins.become.sudo"}[definition.plugin]
    documentation = pytest.importorskip(module).DOCUMENTATION
    options: dict[str, dict[str, Any]] = yaml.safe_load(documentation)["options"]
    return options[definition.ansible]


@pytest.mark.parametrize("name", DEFINITIONS)
def test_each_setting_is_read_where_ansible_reads_it(name: str) -> None:
    definition = DEFINITIONS[name]
    theirs = _ansible_definition(definition)
    assert definition.ini == tuple((entry.get("section", "defaults"), entry["key"])
                                   for entry in theirs.get("ini") or [])
    assert definition.env == tuple(entry["name"] for entry in theirs.get("env") or [])
    assert definition.kind == KINDS[theirs.get("type")]
