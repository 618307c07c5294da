"""The process's ends that the console script (``nodeprov.__main__``) owns: a reader that goes
away, a terminal of width 0, Ctrl-C while nodeprov still imports."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import nodeprov.cli
from nodeprov.__main__ import main
from nodeprov.errors import EXIT_INTERRUPTED, EXIT_OUTPUT_CLOSED

INVENTORY = Path(__file__).parent / "data/inventories/ansible-test-complex-ini/complex.ini"
# 128 nodes, none reached: --list-hosts only reads the inventory
MANY_NODES = "all:\n  vars:\n    node_subnet: 10.0.0.0/24\n  hosts:\n" + "".join(
    f"    node{n}:\n      ansible_host: 10.0.0.{n}\n" for n in range(1, 129))


@pytest.mark.parametrize("args", [
    ["--help"],
    ["apply", "--help"],
    ["apply", "--list-hosts", "{many}"],
    ["inventory", "--list", str(INVENTORY)],
])
def test_a_reader_that_went_away_is_exit_141_and_no_traceback(args: list[str],
                                                               tmp_path: Path) -> None:
    """As ``nodeprov ... | head -1``, made certain: the pipe's reader is gone before the first
    write. Exit 1 would read as "a host failed"."""
    (tmp_path / "many.yaml").write_text(MANY_NODES)
    args = [each.format(many=tmp_path / "many.yaml") for each in args]
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        ended = subprocess.run([sys.executable, "-m", "nodeprov", *args], stdout=write_end,
                               stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write_end)
    assert (ended.returncode, ended.stderr) == (EXIT_OUTPUT_CLOSED, "")


def test_a_reader_that_stays_is_exit_0() -> None:
    ended = subprocess.run([sys.executable, "-m", "nodeprov", "inventory", "--list",
                            str(INVENTORY)], capture_output=True, text=True, timeout=60)
    assert ended.returncode == 0 and '"_meta"' in ended.stdout


@pytest.mark.parametrize("columns", ["0", "000"])
def test_columns_of_zero_still_shows_the_help(columns: str) -> None:
    ended = subprocess.run([sys.executable, "-m", "nodeprov", "--help"], capture_output=True,
                           text=True, timeout=60, env={**os.environ, "COLUMNS": columns})
    assert ended.returncode == 0 and "Usage: python -m nodeprov" in ended.stdout


def test_ctrl_c_before_the_cli_catches_it_is_exit_130(monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(nodeprov.cli, "app", interrupted)
    with pytest.raises(SystemExit) as ended:
        main()
    assert ended.value.code == EXIT_INTERRUPTED


# A command that writes nothing and fails as a host failure does (exit 1)
FAILS_QUIETLY = ("import sys, nodeprov.cli\n"
                 "nodeprov.cli.app = lambda: sys.exit(1)\n"
                 "from nodeprov.__main__ import main\n"
                 "main()\n")


@pytest.mark.parametrize("reader_gone", [False, True])
def test_a_host_failure_is_exit_1_even_where_the_reader_has_gone(reader_gone: bool) -> None:
    """``nodeprov apply inv | grep -q ...``: the reader may leave early, but only a write that
    met the closed pipe makes the exit 141."""
    read_end, write_end = os.pipe()
    if reader_gone:
        os.close(read_end)
    try:
        ended = subprocess.run([sys.executable, "-c", FAILS_QUIETLY], stdout=write_end,
                               stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write_end)
        if not reader_gone:
            os.close(read_end)
    assert (ended.returncode, ended.stderr) == (1, "")
