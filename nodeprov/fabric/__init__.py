"""Is the fast fabric used? NCCL's own INFO lines read back (``nodeprov fabric LOG...``)::

    report = read_logs([Path("node1.log"), Path("node2.log")])
    report.verdict, report.nodes[0].network, report.nodes[0].causes
    read_outputs({"node1": stdout_of_node1})   # the verification job's kept output; or None

``lines`` finds NCCL's lines in any launcher's output, ``ranklog`` folds each rank's,
``network`` says which network, devices and GPUDirect they show, ``causes`` why a path is
slower, ``verdict`` the per-node summary. Pure: reads the given files, nothing else
(docs/fabric.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

from nodeprov.errors import InputError
from nodeprov.fabric.lines import MAX_LINE, NcclLine, bare_version, parse_line, read_log
from nodeprov.fabric.ranklog import Ranks, fold
from nodeprov.fabric.verdict import FabricReport, read_fabric


def read_logs(paths: Iterable[Path]) -> FabricReport:
    """Every NCCL line of every file, ranks of many nodes mixed in any order; a file without
    one is an InputError naming it (NCCL_DEBUG=INFO was not set where it was written)."""
    versions: dict[tuple[str, int, int], str] = {}
    ranks: Ranks = {}
    for path in paths:
        before = sum(log.lines for log in ranks.values())
        # line by line: a log may be gigabytes
        fold(_nccl_lines(str(path), read_log(path), versions), ranks)
        if sum(log.lines for log in ranks.values()) == before:
            raise InputError("no NCCL debug line in it: run the job with NCCL_DEBUG=INFO "
                             "(NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH) and give its output",
                             source=str(path))
    return _report(ranks, versions)


def read_outputs(outputs: Mapping[str, str]) -> FabricReport | None:
    """The same report from text already read (source name -> text: each node's output of
    the verification job, bounded by the session); None where no text has an NCCL line."""
    versions: dict[tuple[str, int, int], str] = {}
    ranks: Ranks = {}
    for source, text in outputs.items():
        numbered = ((number, raw[:MAX_LINE])
                    for number, raw in enumerate(text.splitlines(), start=1))
        fold(_nccl_lines(source, numbered, versions), ranks)
    return _report(ranks, versions) if ranks else None


def _report(ranks: Ranks, versions: Mapping[tuple[str, int, int], str]) -> FabricReport:
    for key, log in ranks.items():
        log.version = log.version or versions.get(key)
    return read_fabric(ranks)


def _nccl_lines(source: str, numbered: Iterable[tuple[int, str]],
                versions: dict[tuple[str, int, int], str]) -> Iterator[NcclLine]:
    """The NCCL lines of ``source``; a bare ``NCCL version`` line is the version of the rank
    whose line came just before it (rank 0 prints it between its own lines)."""
    last: NcclLine | None = None
    for number, raw in numbered:
        line = parse_line(raw, f"{source}:{number}")
        if line is not None:
            last = line
            yield line
        elif last is not None and (version := bare_version(raw)) is not None:
            versions.setdefault(last.process, version)
