"""Managed blocks keep every line outside them byte for byte."""

from __future__ import annotations

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


def test_unterminated_block_is_not_a_block() -> None:
    text = blocks.begin_marker("hosts") + "\nuser line\n"
    assert blocks.find_block(text, "hosts") is None


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
