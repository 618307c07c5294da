"""Name the likely cause of a failed verification job from a node's output tail.

Known torch, NCCL and gloo messages (the rules of ``job.causes``) map to the nodeprov item that
fixes them, most specific rule first::

    >>> found = diagnose("ModuleNotFoundError: No module named 'torch'", node="node2")
    >>> found.item, found.cause, found.fix
    ('venv', "torch is missing from the node's venv", 'nodeprov apply --limit node2 --tags venv')

On a node without GPUs (``gpus=0``, from its facts), a script that asks CUDA for a device
needs a GPU the node does not have, whatever torch build answered::

    >>> diagnose("AttributeError: module 'torch._C' has no attribute '_cuda_setDevice'",
    ...          node="node2", gpus=0).cause
    'the script needs a GPU (it asks CUDA for one) and this node has none'

Unknown output gives ``None``: better no hint than a wrong one. ``own`` says the cause is the
node's own, not the echo of a peer that failed first (a lost connection, a missed rendezvous).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from nodeprov.job.causes import RULES

EVIDENCE_CHARS = 200


@dataclass(frozen=True)
class Diagnosis:
    """What probably went wrong, the nodeprov item that fixes it, and the line that told us.

    >>> found = Diagnosis("hosts", "...", "nodeprov apply --limit {node} --tags hosts", "...",
    ...                   node="node2")
    >>> found.fix
    'nodeprov apply --limit node2 --tags hosts'
    >>> found.fix_for(["node2", "node5"])  # nodes that failed alike: one command for all
    'nodeprov apply --limit node2,node5 --tags hosts'
    """

    item: str
    cause: str
    fix_template: str  # may name {node}
    evidence: str
    own: bool = False
    node: str = "NODE"

    @property
    def fix(self) -> str:
        """The fix, for the node whose output this is."""
        return self.fix_for([self.node])

    def fix_for(self, nodes: Sequence[str]) -> str:
        """The fix, for ``nodes`` together (a --limit pattern lists them)."""
        return self.fix_template.format(node=",".join(nodes))


def _line_at(text: str, index: int) -> str:
    """The line holding ``text[index]``; a long one cut to a window that still shows the match."""
    start = text.rfind("\n", 0, index) + 1
    end = text.find("\n", index)
    line = text[start:] if end == -1 else text[start:end]
    if len(line) <= EVIDENCE_CHARS:
        return line.strip()
    window = max(0, index - start - EVIDENCE_CHARS // 4)
    return ("..." if window else "") + line[window:window + EVIDENCE_CHARS].strip()


def diagnose(output: str, node: str = "NODE", *, gpus: int | None = None
             ) -> Diagnosis | None:
    """The likely cause of the failure ``output`` shows, or None when no rule knows it;
    ``gpus``: how many the node has, where its facts say (rules about a node without GPUs)."""
    for rule in RULES:
        if rule.without_gpus and gpus != 0:
            continue
        found = rule.pattern.search(output)
        if found:
            return Diagnosis(rule.item, rule.cause, rule.fix, _line_at(output, found.start()),
                             own=rule.own, node=node)
    return None


def diagnose_nodes(tails: Mapping[str, str]) -> list[tuple[str, Diagnosis]]:
    """Diagnose each node's output tail; nodes whose output no rule knows are left out.

    >>> diagnose_nodes({"node1": "ok", "node2": "Duplicate GPU detected"})[0][0]
    'node2'
    """
    found = ((node, diagnose(tail, node)) for node, tail in tails.items())
    return [(node, diagnosis) for node, diagnosis in found if diagnosis is not None]
