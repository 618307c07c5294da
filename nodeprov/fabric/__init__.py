"""Is the fast fabric used? NCCL's own INFO lines read back (``nodeprov fabric LOG...``)::

    report = read_logs([Path("node1.log"), Path("node2.log")])
    report.verdict, report.nodes[0].network, report.nodes[0].causes

``lines`` finds NCCL's lines in any launcher's output, ``ranklog`` folds each rank's,
``network`` says which network, devices and GPUDirect they show, ``causes`` why a path is
slower, ``verdict`` the per-node summary. Pure: reads the given files, nothing else
(docs/fabric.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path

from nodeprov.errors import InputError
from nodeprov.fabric.lines import NcclLine, bare_version, parse_line, read_log
from nodeprov.fabric.ranklog import Ranks, fold
from nodeprov.fabric.verdict import FabricReport, read_fabric


def read_logs(paths: Iterable[Path]) -> FabricReport:
    """Every NCCL line of every file, ranks of many nodes mixed in any order; a file without
    one is an InputError naming it (NCCL_DEBUG=INFO was not set where it was written)."""
    versions: dict[tuple[str, int, int], str] = {}
    ranks: Ranks = {}
    for path in paths:
        before = sum(log.lines for log in ranks.values())
        fold(_nccl_lines(path, versions), ranks)  # line by line: a log may be gigabytes
        if sum(log.lines for log in ranks.values()) == before:
            raise InputError("no NCCL debug line in it: run the job with NCCL_DEBUG=INFO "
                             "(NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH) and give its output",
                             source=str(path))
    for key, log in ranks.items():
        log.version = log.version or versions.get(key)
    return read_fabric(ranks)


def _nccl_lines(path: Path, versions: dict[tuple[str, int, int], str]) -> Iterator[NcclLine]:
    """The NCCL lines of ``path``; a bare ``NCCL version`` line is the version of the rank
    whose line came just before it (rank 0 prints it between its own lines)."""
    last: NcclLine | None = None
    for number, raw in read_log(path):
        line = parse_line(raw, f"{path}:{number}")
        if line is not None:
            last = line
            yield line
        elif last is not None and (version := bare_version(raw)) is not None:
            versions.setdefault(last.process, version)
