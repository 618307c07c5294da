"""One verdict per command: the terminal's last line, the JSON report's ``verdict`` and the
HTML page's first line are the same text, and it says PASS exactly when the exit code is 0::

    line = verdict([Part("3 hosts ok"), Part("the job failed on 3 nodes", ok=False)])
    # 'FAIL: 3 hosts ok; the job failed on 3 nodes'
    print_verdict(console, line)

Each part is one thing the command found (the hosts, the checks, a proof), so the line agrees
with the FAILED lines above it without repeating them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.console import Console

if TYPE_CHECKING:
    from nodeprov.proof.prove import Proof


@dataclass(frozen=True)
class Part:
    text: str
    ok: bool = True
    warning: bool = False  # passed, with a named warning (a slower fabric path): exit code 3


def verdict(parts: Iterable[Part]) -> str:
    """
    >>> verdict([Part("36 checks on 3 nodes, no drift")])
    'PASS: 36 checks on 3 nodes, no drift'
    >>> verdict([Part("1 of 3 hosts failed", ok=False), Part("job: not run")])
    'FAIL: 1 of 3 hosts failed; job: not run'
    >>> verdict([Part("3 hosts ok"), Part("slower-path: ...", warning=True)])
    'WARN: 3 hosts ok; slower-path: ...'
    """
    listed = list(parts)
    word = ("FAIL: " if not all(part.ok for part in listed)
            else "WARN: " if any(part.warning for part in listed) else "PASS: ")
    return word + "; ".join(part.text for part in listed)


def passed(line: str) -> bool:
    """Whether a verdict line says PASS (the exit code 0 goes with it)."""
    return line.startswith("PASS: ")


def warned(line: str) -> bool:
    """Whether a verdict line passed with a named warning (apply's exit code 3)."""
    return line.startswith("WARN: ")


def proof_parts(proofs: Iterable[Proof], strict: bool = False) -> list[Part]:
    """Each proof's own verdict, its PASS or FAIL word dropped (the line says it once), and
    its slower-path warning: a FAIL where ``strict`` (verify), else a WARN (apply)."""
    parts = []
    for proof in proofs:
        text = proof.verdict.partition(": ")[2]
        if proof.slower:
            text += f"; {proof.slower}"
        ok = proof.ok and not (strict and proof.slower)
        parts.append(Part(("job: " if proof.ok else "") + text, ok, bool(proof.slower)))
    return parts


def print_verdict(console: Console, line: str) -> None:
    style = "bold green" if passed(line) else "bold yellow" if warned(line) else "bold red"
    console.print(line, style=style, markup=False,
                  highlight=False, soft_wrap=True)  # one line, however long, for a log's grep
