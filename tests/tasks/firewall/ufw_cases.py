"""ufw's files in the recorded cases of tests/tasks/data/firewall (what the firewall task's probe
printed on a Debian 12 node after the ufw commands record.sh names there), shared by the tests
of ufw.py, ufw_files.py and the firewall task.

    section("mixed", ufw.RULES)        # user.rules as ufw wrote it in the "mixed" case
"""

from __future__ import annotations

from pathlib import Path

from nodeprov.tasks.firewall import read_state
from tests.tasks.kit import make_facts

DATA = Path(__file__).parents[1] / "data" / "firewall"
FACTS = make_facts(hostname="node1", fqdn="node1", kernel="6.1.0", interfaces=(),
                   ephemeral_port_range=(32768, 60999), ufw_installed=True, ufw_active=True,
                   systemd=False, package_manager="apt-get", gpu=None)


def recorded(case: str) -> str:
    return (DATA / f"{case}.probe").read_text()


def texts(case: str) -> dict[str, str | None]:
    """ufw's files as the probe read them in a recorded case (None: absent)."""
    return dict(read_state(recorded(case), FACTS).texts)


def section(case: str, path: str) -> str:
    text = texts(case)[path]
    assert text is not None
    return text
