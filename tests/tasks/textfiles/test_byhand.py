"""The by-hand wording's commands, run through ``sh -c`` on this machine as a person would
paste them: each comments out exactly the line it names, whatever the path or the text."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nodeprov.tasks.textfiles import byhand

MARKER = f": {byhand.COMMENT_OUT}: "


def run_printed(item: str, cwd: Path) -> None:
    """Run the command of a by-hand item as printed, in a shell."""
    command = item.rpartition(MARKER)[2]
    subprocess.run(["sh", "-c", command], cwd=cwd, check=True)


def test_a_path_with_a_space_and_a_quote_is_quoted_and_only_its_line_goes(
        tmp_path: Path) -> None:
    path = tmp_path / "it's a file.conf"
    path.write_text("keep=1\nNCCL_SOCKET_IFNAME=eth1\nkeep=2\n")
    item = byhand.line(str(path), 2, "NCCL_SOCKET_IFNAME=eth1", "wins")
    assert item.endswith(f" '{tmp_path}/it'\"'\"'s a file.conf'"), item
    run_printed(item, tmp_path)
    assert path.read_text() == "keep=1\n# NCCL_SOCKET_IFNAME=eth1\nkeep=2\n"


@pytest.mark.parametrize("order", [(0, 1, 2), (2, 1, 0)])
def test_several_lines_of_one_file_go_in_any_order_and_a_second_run_changes_nothing(
        tmp_path: Path, order: tuple[int, ...]) -> None:
    path = tmp_path / "environment"
    text = ("A=1\n# BEGIN nodeprov nccl\nB=ours\n# END nodeprov nccl\nB=theirs\nC=1\n"
            "  x.*[^$]\\/ y \nD=2\n")
    path.write_text(text)
    named = [(5, "B=theirs"), (7, "  x.*[^$]\\/ y "), (8, "D=2")]
    items = [byhand.line(str(path), number, line, "wins") for number, line in named]
    for index in order:
        run_printed(items[index], tmp_path)
    wanted = ("A=1\n# BEGIN nodeprov nccl\nB=ours\n# END nodeprov nccl\n# B=theirs\nC=1\n"
              "#   x.*[^$]\\/ y \n# D=2\n")
    assert path.read_text() == wanted
    for item in items:
        run_printed(item, tmp_path)
    assert path.read_text() == wanted


def test_a_line_in_the_home_folder_is_found_in_the_home_of_who_runs_it(tmp_path: Path) -> None:
    (tmp_path / ".nccl.conf").write_text("NCCL_SOCKET_IFNAME=lo\n")
    item = byhand.line("~/.nccl.conf", 1, "NCCL_SOCKET_IFNAME=lo", "NCCL keeps the first")
    assert item.endswith(" ~/.nccl.conf"), item
    command = item.rpartition(MARKER)[2]
    subprocess.run(["sh", "-c", command], env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
                   check=True)
    assert (tmp_path / ".nccl.conf").read_text() == "# NCCL_SOCKET_IFNAME=lo\n"


def test_what_a_node_wrote_prints_escaped_and_cannot_reach_the_shell(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    hostile = "10.0.0.9 n1 '$(touch pwned)'; touch pwned2 \x1b[2J"
    path.write_text(f"{hostile}\nkeep\n")
    item = byhand.line(str(path), 1, hostile, "maps n1 elsewhere")
    assert "\x1b" not in item, item
    run_printed(item, tmp_path)
    assert path.read_text() == f"# {hostile}\nkeep\n"
    assert not list(tmp_path.glob("pwned*"))
