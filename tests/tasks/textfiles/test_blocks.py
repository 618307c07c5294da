"""Managed blocks keep every line outside them byte for byte."""

from __future__ import annotations

import re

import pytest

from nodeprov.tasks.textfiles import blocks

USER = "127.0.0.1\tlocalhost   # keep my tabs\n::1 ip6-localhost\n\n# my comment"


def test_append_then_replace_keeps_outside_lines() -> None:
    first = blocks.replace_block(USER, "hosts", ["10.0.0.11 node1"])
    assert first.startswith(USER + "\n")
    second = blocks.replace_block(first + "after\n", "hosts", ["10.0.0.12 node2"])
    assert second == (USER + "\n" + blocks.begin_marker("hosts") + "\n10.0.0.12 node2\n"
                      + blocks.end_marker("hosts") + "\nafter\n")
    assert blocks.block_lines(second, "hosts") == ["10.0.0.12 node2"]


def test_same_block_is_no_change() -> None:
    text = blocks.replace_block(USER, "hosts", ["a"])
    assert blocks.replace_block(text, "hosts", ["a"]) == text


def test_remove_block() -> None:
    text = blocks.replace_block("x\n", "env", ["A=1"]) + "y\n"
    assert blocks.remove_block(text, "env") == "x\ny\n"
    assert blocks.remove_block("x\n", "env") == "x\n"


BEGIN, END = blocks.begin_marker("hosts"), blocks.end_marker("hosts")


@pytest.mark.parametrize(("text", "error"), [
    # a BEGIN alone was no block: one was appended, and the next run took the BEGIN left
    # above it for its start, deleting the user's lines between them
    (f"127.0.0.1 localhost\n{BEGIN}\nuser line\n", f"line 2: '# BEGIN nodeprov hosts' has no "
     f"'{END}' after it; add the END line where the block ends, or remove the BEGIN line"),
    (f"{END}\nuser line\n", f"line 1: '{END}' has no '# BEGIN nodeprov hosts' before it"),
    (f"{END}\nuser line\n{BEGIN}\n", "line 3: '# BEGIN nodeprov hosts' has no"),
    # a second block was left as it was, stale, under the updated first
    (f"{BEGIN}\na\n{END}\nuser line\n{BEGIN}\nb\n{END}\n", "lines 1, 3, 5, 7: more than one "
     f"'# BEGIN nodeprov hosts' or '{END}' line; keep one block"),
])
def test_markers_that_are_not_one_whole_block_are_refused_naming_the_line(
        text: str, error: str) -> None:
    for edit in (lambda: blocks.replace_block(text, "hosts", ["10.0.0.11 node1"]),
                 lambda: blocks.remove_block(text, "hosts"),
                 lambda: blocks.block_lines(text, "hosts")):
        with pytest.raises(ValueError, match=re.escape(error)):
            edit()


def test_a_block_whose_name_starts_with_anothers_is_its_own() -> None:
    # "# BEGIN nodeprov hostsX" began the block "hosts" too, up to hosts' END below it
    text = f"# BEGIN nodeprov hostsX\nuser line\n{BEGIN}\nold\n{END}\n"
    assert blocks.replace_block(text, "hosts", ["new"]) == (
        f"# BEGIN nodeprov hostsX\nuser line\n{BEGIN}\nnew\n{END}\n")
    assert blocks.find_block("# BEGIN nodeprov hosts2 (managed)\nx\n# END nodeprov hosts2\n",
                             "hosts") is None


def test_diff_and_absent() -> None:
    diff = blocks.unified_diff("/etc/x", None, "a\n")
    assert diff.startswith("--- /dev/null\n+++ /etc/x\n") and "+a" in diff


# --- the probe, run here under sh on files in tmp_path -------------------------------------------

# every character str.splitlines ends a line at, and ones a terminal acts on
LINE_BREAKERS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def test_every_accepted_line_is_idempotent_and_reads_back_as_written() -> None:
    """issue #14: a block line holding U+2028 read back as two lines, and the block task
    changed the file on every run. Every character validate.text_value accepts (in the BMP's
    first 12288 and every line breaker) is tried in a block line, with line breakers outside
    the block and a CRLF file."""
    from nodeprov.util import validate

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
        once = blocks.replace_block(outside, "m", [line, "y"])
        assert blocks.replace_block(once, "m", [line, "y"]) == once, repr(char)
        assert blocks.block_lines(once, "m") == [line, "y"], repr(char)
        assert once.startswith(outside)
    assert accepted > 12000
    for breaker in LINE_BREAKERS.replace("\r", ""):  # \r: ends a CRLF line, refused alone too
        with pytest.raises(ValueError):
            validate.text_value(f"a{breaker}b")


@pytest.mark.parametrize("line", ["10.0.0.11 node1\n6.6.6.6 pypi.org", "a\rb", "a\u2028b",
                                  "a\x1b[2Jb", "a\x00b"])
def test_a_block_line_is_checked_again_where_it_is_written(line: str) -> None:
    with pytest.raises(ValueError, match="newline or control character"):
        blocks.replace_block("", "hosts", ["10.0.0.12 node2", line])


@pytest.mark.parametrize("line", ["# END nodeprov hosts",
                                  "# BEGIN nodeprov hosts",
                                  "# BEGIN nodeprov hosts (managed by nodeprov; edits inside are "
                                  "overwritten)"])
def test_a_block_line_that_is_one_of_its_markers_is_refused(line: str) -> None:
    """Written, it would make a block the next run refuses as two blocks, state: absent too."""
    with pytest.raises(ValueError, match="is a marker of block 'hosts'"):
        blocks.replace_block("", "hosts", [line])
    assert blocks.block_line("hosts", "# END nodeprov hosts2") == "# END nodeprov hosts2"
