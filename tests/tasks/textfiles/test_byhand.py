"""The by-hand wording's commands, run through ``sh -c`` on this machine as a person would
paste them: each comments out exactly the line it names, whatever the path or the text."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from nodeprov.tasks.textfiles import byhand, envfile
from tests.checks.drift.printed import printed_commands


def printed(item: str) -> str:
    """The one command a by-hand item prints, as the drift corpus's kit reads it."""
    [command] = printed_commands(item)
    return command


def run_printed(item: str, cwd: Path) -> None:
    """Run the command of a by-hand item as printed, in a shell."""
    subprocess.run(["sh", "-c", printed(item)], cwd=cwd, check=True)


def test_the_kit_reads_each_command_whole_and_the_repair() -> None:
    """tests/checks/drift/printed.py's reading (its doctest is not collected there): a "; "
    inside a quoted sed pattern does not end the command."""
    assert printed_commands(
        "n2 x: by hand: f:1 'a; b' wins: comment it out: sed -i '/^a; b$/s/^/# /' f; "
        "g:2 'c' wins: comment it out: sed -i x g; repair: nodeprov apply i.yaml --limit n2") == [
        "sed -i '/^a; b$/s/^/# /' f", "sed -i x g", "nodeprov apply i.yaml --limit n2"]


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
    command = printed(item)
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


IF_BLOCK = "if [ -d / ]; then\n  export NCCL_IB_HCA=mlx5_0\nfi\nexport KEEP=1\n"


@pytest.mark.parametrize("shell", ["sh", "dash", "bash"])
def test_a_shell_files_line_in_a_block_becomes_a_command_that_does_nothing(
        tmp_path: Path, shell: str) -> None:
    """Commented out with '# ', the `if` would be left empty: `bash -n` fails near `fi`."""
    path = tmp_path / "site.sh"
    path.write_text(IF_BLOCK)
    item = byhand.line(str(path), 2, "  export NCCL_IB_HCA=mlx5_0", "wins", syntax="shell")
    run_printed(item, tmp_path)
    assert path.read_text() == IF_BLOCK.replace("  export", ": #   export")
    subprocess.run([shell, "-n", str(path)], check=True)
    ran = subprocess.run([shell, "-c", '. "$1"; echo "${NCCL_IB_HCA-unset} $KEEP"', shell,
                          str(path)], capture_output=True, text=True, check=True)
    assert (ran.stdout, ran.stderr) == ("unset 1\n", "")
    assert [entry[1] for entry in envfile.parse_profile_sh(path.read_text())] == ["KEEP"]
    run_printed(item, tmp_path)
    assert path.read_text() == IF_BLOCK.replace("  export", ": #   export")


@pytest.mark.parametrize(("text", "number", "syntax", "read"), [
    ('export NCCL_IB_HCA="mlx5_0,\nmlx5_1"\n', 1, "shell",
     lambda text: envfile.parse_profile_sh(text)[0][2]),
    ("export NCCL_IB_HCA=mlx5_0 \\\n  NCCL_DEBUG=INFO\n", 1, "shell",
     lambda text: envfile.parse_profile_sh(text)[0][2]),
    ("NCCL_IB_HCA DEFAULT=mlx5_0 \\\n  NCCL_DEBUG=INFO\n", 1, "pam_env",
     envfile.session_settings),
    ("NCCL_IB_HCA=mlx5_0 \\\nNCCL_DEBUG=INFO\n", 1, "pam_env",
     envfile.parse_pam_env)])
def test_a_line_that_goes_on_on_the_next_one_is_left_to_edit_by_hand(
        text: str, number: int, syntax: byhand.Syntax, read: Callable[[str], object]) -> None:
    """Its first line commented out, the rest would be read as a line of its own (an open
    quote, a setting): no command is printed, and no line but the first is read as one."""
    line = text.split("\n")[number - 1]
    item = byhand.line("/etc/x", number, line, "wins", syntax=syntax)
    assert item.endswith(f": {byhand.EDIT_BY_HAND} (it goes on on the next line, which "
                         "commenting out this one would leave as a line of its own)"), item
    assert not any(f": {verb}: " in item for verb in byhand.VERBS), item
    assert read(text) in (None, [(1, "NCCL_IB_HCA")], [(1, "NCCL_IB_HCA", "mlx5_0 \\")])


@pytest.mark.parametrize("locale", ["C", "C.UTF-8"])
@pytest.mark.parametrize("invisible", ["\u00a0", "\u200b", "\x1b"])
def test_a_character_that_cannot_be_printed_is_matched_in_any_locale(
        tmp_path: Path, locale: str, invisible: str) -> None:
    """A '.' is one character in a UTF-8 locale, one byte in C (sudo's, a minimal image's):
    the command sets C and matches each byte."""
    path = tmp_path / "environment"
    text = f"NCCL_SOCKET_IFNAME=lo{invisible}"
    path.write_text(f"{text}\nNCCL_SOCKET_IFNAME=lo\n")
    item = byhand.line(str(path), 1, text, "wins")
    command = printed(item)
    subprocess.run(["sh", "-c", command], env={"LC_ALL": locale, "PATH": "/usr/bin:/bin"},
                   check=True)
    assert path.read_text() == f"# {text}\nNCCL_SOCKET_IFNAME=lo\n"
    assert invisible not in item, item


def test_a_byte_that_is_not_utf8_has_its_line_found_by_number(tmp_path: Path) -> None:
    """The node's bytes are read with errors="replace": U+FFFD is in no file, so no text
    pattern could match; the line's number can, and a second run changes nothing."""
    path = tmp_path / "hosts"
    raw = b"10.0.0.1 node1\n10.9.9.9 node1\xff\n10.9.9.9 other\n"
    path.write_bytes(raw)
    text = raw.decode(errors="replace").split("\n")[1]
    item = byhand.line(str(path), 2, text, "maps node1 elsewhere")
    assert "as verify read the file" in item and item.endswith(
        f": LC_ALL=C sed -i '2s/^[^#]/# &/' {path}"), item
    for _ in range(2):
        run_printed(item, tmp_path)
        assert path.read_bytes() == raw.replace(b"10.9.9.9 node1", b"# 10.9.9.9 node1")
