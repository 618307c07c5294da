"""What every report says of the run it reports: when it started, on which inventory, and for
``nodeprov run`` which script with which arguments; the terminal's first line and the JSON's
``started``, ``inventory`` and ``script`` fields (the HTML page shows them under its verdict)::

    header = Header.now("run", Path("cluster.yaml"), ("train.py", "--lr", "3e-4"))
    console.print(header.line())  # nodeprov run on cluster.yaml at 2026-11-28T23:50:35Z: ...
    report = {**report, **header.fields()}
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Header:
    command: str
    inventory: Path
    started: str  # UTC, ISO 8601 to the second
    script: tuple[str, ...] = ()  # run: the script and its arguments

    @classmethod
    def now(cls, command: str, inventory: Path, script: tuple[str, ...] = ()) -> Header:
        started = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        return cls(command, inventory, started, script)

    def line(self) -> str:
        """
        >>> Header("run", Path("c.yaml"), "2026-11-28T23:50:35Z", ("train.py", "a b")).line()
        "nodeprov run on c.yaml at 2026-11-28T23:50:35Z: train.py 'a b'"
        """
        ran = f"nodeprov {self.command} on {self.inventory} at {self.started}"
        return f"{ran}: {shlex.join(self.script)}" if self.script else ran

    def fields(self) -> dict[str, Any]:
        """The JSON report's fields (report.schema.json)."""
        return {"started": self.started, "inventory": str(self.inventory),
                **({"script": list(self.script)} if self.script else {})}
