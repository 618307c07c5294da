"""Managed blocks keep every line outside them byte for byte."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from nodeprov import files

USER = "127.0.0.1\tlocalhost   # keep my tabs\n::1 ip6-localhost\n\n# my comment"


def test_append_then_replace_keeps_outside_lines() -> None:
    first = files.replace_block(USER, "hosts", ["10.0.0.11 node1"])
    assert first.startswith(USER + "\n")
    second = files.replace_block(first + "after\n", "hosts", ["10.0.0.12 node2"])
    assert second == (USER + "\n" + files.begin_marker("hosts") + "\n10.0.0.12 node2\n"
                      + files.end_marker("hosts") + "\nafter\n")
    assert files.block_lines(second, "hosts") == ["10.0.0.12 node2"]


def test_same_block_is_no_change() -> None:
    text = files.replace_block(USER, "hosts", ["a"])
    assert files.replace_block(text, "hosts", ["a"]) == text


def test_remove_block() -> None:
    text = files.replace_block("x\n", "env", ["A=1"]) + "y\n"
    assert files.remove_block(text, "env") == "x\ny\n"
    assert files.remove_block("x\n", "env") == "x\n"


def test_unterminated_block_is_not_a_block() -> None:
    text = files.begin_marker("hosts") + "\nuser line\n"
    assert files.find_block(text, "hosts") is None


def test_diff_and_absent() -> None:
    diff = files.unified_diff("/etc/x", None, "a\n")
    assert diff.startswith("--- /dev/null\n+++ /etc/x\n") and "+a" in diff


# --- the probe, run here under sh on files in tmp_path -------------------------------------------

def read(*paths: str | Path, user: Sequence[str] = ()) -> dict[str, str | None]:
    """What ``read_many_probe`` reads of these paths, as ``user`` (a setpriv prefix) if given."""
    argv = [*user, *files.read_many_probe(*map(str, paths)).argv]
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    return files.observed_files(done.stdout)


def test_texts_come_back_byte_for_byte(tmp_path: Path) -> None:
    texts = {"plain": "a\nb\n", "no-final-newline": "a\nb", "empty": "", "newlines": "\n\n",
             "nul": "x\0y\0", "utf8": "café ✓\n",
             # lines that look like the probe's own: a header, a status line, the old marker
             "lookalike": f"==> {tmp_path}/plain <==\nread {tmp_path}/plain\n==> /.//x <==\n"
                          "\n@@nodeprov-file /etc/hosts\n@@nodeprov-absent@@"}
    for name, text in texts.items():
        (tmp_path / name).write_bytes(text.encode())
    found = read(*(tmp_path / name for name in texts), "/proc/sys/kernel/ostype")
    assert found == {**{str(tmp_path / name): text for name, text in texts.items()},
                     "/proc/sys/kernel/ostype": "Linux\n"}


def test_absent_globs_directories_and_order(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "b.cfg").write_text("b")
    (tmp_path / "d" / "a.cfg").write_text("")
    (tmp_path / "d" / "c.txt").write_text("not matched")
    (tmp_path / "d" / "sub.cfg").mkdir()
    (tmp_path / "d" / "dangling.cfg").symlink_to(tmp_path / "gone")
    (tmp_path / "d" / "new\nline.cfg").write_text("skipped: its name would end its line")
    found = read(tmp_path / "missing", f"{tmp_path}/d/*.cfg", f"{tmp_path}/none/*.cfg",
                 f"{tmp_path}/d/*.none", tmp_path / "d")
    assert list(found.items()) == [
        (f"{tmp_path}/missing", None), (f"{tmp_path}/d/a.cfg", ""), (f"{tmp_path}/d/b.cfg", "b"),
        (f"{tmp_path}/d/sub.cfg", ""), (f"{tmp_path}/d", "")]  # directories read as empty
    assert read() == {}


def test_an_unreadable_file_reads_as_empty(tmp_path: Path) -> None:
    folder = Path(tempfile.mkdtemp(dir="/tmp"))  # tmp_path's parents are closed to others
    try:
        folder.chmod(0o755)
        (folder / "secret").write_text("x")
        (folder / "secret").chmod(0)
        (folder / "open").write_text("y")
        (folder / "open").chmod(0o644)
        user: list[str] = []
        if os.geteuid() == 0:  # root reads anything: read as nobody
            if not shutil.which("setpriv"):
                pytest.skip("needs util-linux setpriv when run as root")
            user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        found = read(folder / "secret", folder / "open", user=user)
        assert found == {f"{folder}/secret": "", f"{folder}/open": "y"}
        output = subprocess.run([*user, *files.read_many_probe(f"{folder}/secret").argv],
                                capture_output=True, text=True, check=True).stdout
        assert files.observed_files(output, unreadable=None) == {f"{folder}/secret": None}
    finally:
        shutil.rmtree(folder)


def test_each_probe_spells_root_anew_and_the_writer_matches_the_reader() -> None:
    first, second = (files.read_args("/etc/hosts")[0] for _ in range(2))
    # samefile, not normpath: POSIX normpath keeps a leading "//", which Linux reads as "/"
    assert first != second and os.path.samefile(first, "/")
    assert set(first.split("/")) <= {"", "."}
    found = {"/etc/hosts": "127.0.0.1 localhost\n", "/etc/none": None, "/etc/empty": "",
             "/etc/x y": "no final newline"}
    assert files.observed_files(files.files_output(found, root=first)) == found


# every character str.splitlines ends a line at, and ones a terminal acts on
LINE_BREAKERS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def test_every_accepted_line_is_idempotent_and_reads_back_as_written() -> None:
    """issue #14: a block line holding U+2028 read back as two lines, and the block task
    changed the file on every run. Every character validate.text_value accepts (in the BMP's
    first 12288 and every line breaker) is tried in a block line, with line breakers outside
    the block and a CRLF file."""
    from nodeprov import validate

    outside = "a\u2028b\nc\x85d\ne\x0cf\r\n"
    candidates = [chr(code) for code in range(0x3000)] + list(LINE_BREAKERS)
    accepted = 0
    for char in candidates:
        line = f"x{char}# END nodeprov m"
        try:
            validate.text_value(line)
        except ValueError:
            continue
        accepted += 1
        once = files.replace_block(outside, "m", [line, "y"])
        assert files.replace_block(once, "m", [line, "y"]) == once, repr(char)
        assert files.block_lines(once, "m") == [line, "y"], repr(char)
        assert once.startswith(outside)
    assert accepted > 12000
    for breaker in LINE_BREAKERS.replace("\r", ""):  # \r: ends a CRLF line, refused alone too
        with pytest.raises(ValueError):
            validate.text_value(f"a{breaker}b")


@pytest.mark.parametrize("line", ["10.0.0.11 node1\n6.6.6.6 pypi.org", "a\rb", "a\u2028b",
                                  "a\x1b[2Jb", "a\x00b"])
def test_a_block_line_is_checked_again_where_it_is_written(line: str) -> None:
    with pytest.raises(ValueError, match="newline or control character"):
        files.replace_block("", "hosts", ["10.0.0.12 node2", line])
