"""Page size and time of `nodeprov report` for 8, 128 and 512 nodes (issue #34: the page must
grow with what was read; the matrix's grid, N x N, is drawn up to MAX_GRID_NODES). Prints one
row per report: its JSON's size, the page's, and the seconds to read, check and draw it. The
reports: a generated apply and verify (every pair checked), and the recorded 3-node apply
whose matrix merely names the N nodes.

    .venv/bin/python -m tests.bench.htmlpage            # 8 128 512
    .venv/bin/python -m tests.bench.htmlpage 8 128
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nodeprov.commands.report import write_html
from nodeprov.htmlreport import read_report
from tests.htmlreport.reports import big_apply, big_verify, names, recorded


def named_only(count: int) -> dict[str, Any]:
    """The recorded 3-node apply whose matrix names ``count`` nodes and checks none of the
    others: a few KB that made the grid quadratic (issue #34)."""
    report = recorded("apply-3")
    report["proofs"][0]["connectivity"]["nodes"] = names(count)
    return report


KINDS: dict[str, Callable[[int], dict[str, Any]]] = {
    "apply": big_apply, "verify": big_verify, "node list only": named_only}


def measure(folder: Path, kind: str, nodes: int) -> str:
    source, page = folder / f"{kind}-{nodes}.json", folder / f"{kind}-{nodes}.html"
    source.write_text(json.dumps(KINDS[kind](nodes)))
    started = time.perf_counter()
    write_html(read_report(source), str(page), str(source))
    seconds = time.perf_counter() - started
    read, drawn = source.stat().st_size, page.stat().st_size
    return (f"| {kind} | {nodes} | {read / 1e6:.2f} | {drawn / 1e6:.2f} | {drawn / read:.2f} | "
            f"{seconds:.2f} |")


def main(sizes: list[int]) -> None:
    print("| report | nodes | JSON (MB) | page (MB) | page / JSON | read + check + draw (s) |")
    print("| --- | --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory() as folder:
        for nodes in sizes:
            for kind in KINDS:
                print(measure(Path(folder), kind, nodes), flush=True)


if __name__ == "__main__":
    main([int(size) for size in sys.argv[1:]] or [8, 128, 512])
