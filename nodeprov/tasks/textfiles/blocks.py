"""Managed blocks in text files: pure edits (the probe that reads files: remote.reader).

    >>> text = replace_block("127.0.0.1 localhost\\n", "hosts", ["10.0.0.11 node1"])
    >>> print(text, end="")
    127.0.0.1 localhost
    # BEGIN nodeprov hosts (managed by nodeprov; edits inside are overwritten)
    10.0.0.11 node1
    # END nodeprov hosts
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from nodeprov.util import validate

# Starts a line nodeprov commented out (to revert: remove this prefix).
COMMENT_PREFIX = "# nodeprov: "
def begin_marker(name: str) -> str:
    return f"# BEGIN nodeprov {name} (managed by nodeprov; edits inside are overwritten)"


def end_marker(name: str) -> str:
    return f"# END nodeprov {name}"


def split_lines(text: str, *, keepends: bool = False) -> list[str]:
    """``text``'s lines as a file has them: ended by "\\n" only (str.splitlines also ends one
    at U+2028, \\x85, \\x0c..., so a value holding one would read back as two lines); without
    ``keepends``, a CRLF line loses its "\\r" too.

    >>> split_lines("a\\u2028b\\r\\nc")
    ['a\\u2028b', 'c']
    """
    lines = text.split("\n")
    if keepends:
        return [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    return [line.removesuffix("\r") for line in (lines[:-1] if not lines[-1] else lines)]


def find_block(text: str, name: str) -> tuple[int, int] | None:
    """Line indexes (begin, end) of the block's markers, or None; ValueError naming the line
    where the markers are not one whole block (a BEGIN without its END, an END alone, two
    blocks): edited anyway, the lines between a stray marker and the block would be lost.

    >>> find_block("a\\n# BEGIN nodeprov env\\nX=1\\n", "env")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: line 2: '# BEGIN nodeprov env' has no '# END nodeprov env' after it; ...
    """
    lines = split_lines(text)
    opening = f"# BEGIN nodeprov {name}"
    begins = [i for i, line in enumerate(lines) if _opens(line, name)]
    ends = [i for i, line in enumerate(lines) if line == end_marker(name)]
    if not begins and not ends:
        return None
    if len(begins) > 1 or len(ends) > 1:
        where = ", ".join(str(i + 1) for i in sorted(begins + ends))
        raise ValueError(f"lines {where}: more than one '{opening}' or '{end_marker(name)}' "
                         "line; keep one block (its BEGIN and END lines) and remove the others")
    if not ends or begins and begins[0] > ends[0]:
        raise ValueError(f"line {begins[0] + 1}: '{opening}' has no '{end_marker(name)}' after "
                         "it; add the END line where the block ends, or remove the BEGIN line")
    if not begins:
        raise ValueError(f"line {ends[0] + 1}: '{end_marker(name)}' has no '{opening}' before "
                         "it; remove it, or add the BEGIN line where the block starts")
    return begins[0], ends[0]


def _opens(line: str, name: str) -> bool:
    opening = f"# BEGIN nodeprov {name}"
    return line == opening or line.startswith(f"{opening} ")  # not "{name}2"'s


def block_line(name: str, line: str) -> str:
    """``line`` as a line of block ``name``: one line, no control characters, and none of the
    block's markers, which would make the block one the next run refuses (ValueError).

    >>> block_line("env", "# END nodeprov env")
    Traceback (most recent call last):
    ...
    ValueError: '# END nodeprov env' is a marker of block 'env': the block cannot hold it
    """
    validate.text_value(line)
    if _opens(line, name) or line == end_marker(name):
        raise ValueError(f"{line!r} is a marker of block {name!r}: the block cannot hold it")
    return line


def block_lines(text: str, name: str) -> list[str] | None:
    """The lines inside the block, None when there is no block."""
    found = find_block(text, name)
    return None if found is None else split_lines(text)[found[0] + 1:found[1]]


def replace_block(text: str, name: str, lines: Sequence[str]) -> str:
    """Put ``lines`` in the named block (appended when missing); lines outside are kept as is.
    Each line is checked again where it is used (``block_line``: ValueError), whatever task
    made it."""
    for line in lines:
        block_line(name, line)
    block = [begin_marker(name), *lines, end_marker(name)]
    found = find_block(text, name)
    if found is None:
        prefix = text if not text or text.endswith("\n") else text + "\n"
        return prefix + "\n".join(block) + "\n"
    kept = split_lines(text, keepends=True)
    return "".join(kept[:found[0]]) + "\n".join(block) + "\n" + "".join(kept[found[1] + 1:])


def remove_block(text: str, name: str) -> str:
    found = find_block(text, name)
    if found is None:
        return text
    kept = split_lines(text, keepends=True)
    return "".join(kept[:found[0]] + kept[found[1] + 1:])


def unified_diff(path: str, old: str | None, new: str) -> str:
    return "".join(difflib.unified_diff(
        split_lines(old or "", keepends=True), split_lines(new, keepends=True),
        fromfile=path if old is not None else "/dev/null", tofile=path))
