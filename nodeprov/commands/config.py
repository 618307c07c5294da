"""``nodeprov config``: the Ansible settings in force (ansible.cfg, ANSIBLE_* variables), in
``ansible-config dump --only-changed``'s form, then what nodeprov does with each, and what it
does not use::

    print(show_config())
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from nodeprov.config import Settings, read_settings
from nodeprov.inventory.sshargs import parse_ssh_args

SEARCHED = "$ANSIBLE_CONFIG, ./ansible.cfg, ~/.ansible.cfg, /etc/ansible/ansible.cfg"


def show_config(environ: Mapping[str, str] | None = None, cwd: Path | None = None) -> str:
    settings = read_settings(os.environ if environ is None else environ, cwd or Path.cwd())
    lines = list(settings.warnings)
    if settings.config_file is None:
        lines.append(f"no ansible.cfg found (searched {SEARCHED})")
    lines += settings.dump()
    if settings.values:
        lines += ["", "nodeprov:"]
        lines += [f"  {name}: {setting.definition.use}{_not_applied(name, settings)}"
                  for name, setting in sorted(settings.values.items())]
    if settings.not_used:
        said = set(settings.might_matter())
        lines += ["", "not used by nodeprov (docs/ansible.md says why):",
                  *(f"  {entry}" + (" (said at the start of each command)" if entry in said
                                    else "") for entry in settings.not_used)]
    return "\n".join(lines)


def _not_applied(name: str, settings: Settings) -> str:
    if not name.startswith("ssh_") or not name.endswith("args"):
        return ""
    try:
        parsed = parse_ssh_args(str(settings.get(name)))
    except ValueError as error:
        return f"; refused: {error}"
    return f"; not applied: {' '.join(parsed.not_applied)}" if parsed.not_applied else ""
