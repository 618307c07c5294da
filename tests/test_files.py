"""Managed blocks keep every line outside them byte for byte."""

from __future__ import annotations

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
    assert files.observed_text(files.ABSENT) is None
    diff = files.unified_diff("/etc/x", None, "a\n")
    assert diff.startswith("--- /dev/null\n+++ /etc/x\n") and "+a" in diff
