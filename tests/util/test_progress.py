"""Transfers to many nodes: bars on a terminal, one line per node at start and end in a log."""

from __future__ import annotations

import io
import threading

from rich.console import Console

from nodeprov.util.progress import ALL, Advance, Transfers


def test_a_log_gets_one_line_per_node_at_start_and_at_end_however_often_it_advances() -> None:
    out = io.StringIO()
    transfers = Transfers(Console(file=out, width=200), live=False)
    advance = transfers.start("node1", "torch wheels", total=200_000_000)
    for done in range(0, 200_000_001, 1_000_000):
        advance(done, 200_000_000)
    transfers.end("node1")
    files = transfers.start("node2", "sync", total=12, unit="files")
    files(5, 12)
    transfers.end("node2", failed=True)
    lines = out.getvalue().splitlines()
    assert lines[0] == "node1 | torch wheels | 200.0 MB to send"
    assert lines[1].startswith("node1 | torch wheels | sent 200.0 MB in ")
    assert lines[1].endswith("/s")
    assert lines[2:] == ["node2 | sync | 12 files to send", lines[3]]
    assert lines[3].startswith("node2 | sync | failed after 5 files in ")
    assert len(lines) == 4


def test_live_bars_per_node_and_for_all_of_them_from_many_threads() -> None:
    transfers = Transfers(Console(file=io.StringIO(), force_terminal=True), live=True)
    nodes = [f"node{i}" for i in range(8)]
    callbacks = [transfers.start(node, "torch wheels", total=1000) for node in nodes]

    def send(advance: Advance) -> None:
        for done in range(0, 1001, 10):
            advance(done, 1000)

    threads = [threading.Thread(target=send, args=(cb,)) for cb in callbacks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    transfers.end("node0")
    (bars,) = transfers.renderable
    tasks = {task.description: task for task in bars.tasks}
    assert (tasks[ALL].completed, tasks[ALL].total) == (8000, 8000)
    assert tasks["node3: torch wheels"].completed == 1000
    assert not tasks["node0: torch wheels"].visible and tasks["node1: torch wheels"].visible
    shown = io.StringIO()
    Console(file=shown, width=120).print(bars)
    assert "8.0/8.0 kB" in shown.getvalue()


def test_a_hostile_node_name_cannot_move_the_cursor() -> None:
    out = io.StringIO()
    transfers = Transfers(Console(file=out, width=200), live=False)
    transfers.start("node\x1b[2J", "sync", total=1, unit="files")
    assert "\x1b" not in out.getvalue()


def test_the_bar_for_all_goes_when_the_last_transfer_ends() -> None:
    transfers = Transfers(Console(file=io.StringIO(), force_terminal=True), live=True)
    transfers.start("node1", "torch wheels", total=10)(10, 10)
    transfers.start("node2", "torch wheels", total=10)
    (bars,) = transfers.renderable
    overall = next(task for task in bars.tasks if task.description == ALL)
    transfers.end("node1")
    assert overall.visible
    transfers.end("node2")
    assert not overall.visible
    transfers.start("node3", "torch wheels", total=10)
    assert overall.visible


def test_a_bar_shows_its_words_as_written_never_as_markup() -> None:
    # rich's TextColumn reads markup: a task named "Install torch [gpu]" lost its "[gpu]", and
    # one with "[/cuda]" raised MarkupError in the live display (the log path prints plain text)
    transfers = Transfers(Console(file=io.StringIO(), force_terminal=True), live=True)
    transfers.start("node1", "Install torch [gpu]: torch.whl", total=10)
    transfers.start("node2", "Torch [/cuda]: torch.whl", total=10)
    shown = io.StringIO()
    Console(file=shown, width=120).print(*transfers.renderable)
    assert "node1: Install torch [gpu]: torch.whl" in shown.getvalue()
    assert "node2: Torch [/cuda]: torch.whl" in shown.getvalue()


def test_a_transfer_of_unknown_size_shows_what_is_done_and_leaves_the_total_open() -> None:
    # a node installing from its own index: the bytes it wrote are known, the total is not
    transfers = Transfers(Console(file=io.StringIO(), force_terminal=True), live=True)
    transfers.start("node1", "torch wheels", total=1_000_000)(1_000_000, 1_000_000)
    transfers.start("node2", "torch: install torch", total=None, verb="wrote")(
        2_500_000, None)
    (bars,) = transfers.renderable
    tasks = {task.description: task for task in bars.tasks}
    assert tasks["node2: torch: install torch"].total is None
    assert (tasks[ALL].completed, tasks[ALL].total) == (3_500_000, None)
    shown = io.StringIO()
    Console(file=shown, width=120).print(bars)
    assert "2.5/? MB" in shown.getvalue() and "3.5/? MB" in shown.getvalue()
    out = io.StringIO()
    logged = Transfers(Console(file=out, width=200), live=False)
    logged.start("node2", "torch: install torch", total=None, verb="wrote")(2_500_000, None)
    logged.end("node2")
    first, last = out.getvalue().splitlines()
    assert first == "node2 | torch: install torch | size not known beforehand"
    assert last.startswith("node2 | torch: install torch | wrote 2.5 MB in ")
