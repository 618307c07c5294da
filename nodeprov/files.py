"""Managed blocks in text files: pure edits, plus the probe that reads a file.

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

from nodeprov.tasks.base import Probe

ABSENT = "@@nodeprov-absent@@"
# Starts a line nodeprov commented out (to revert: remove this prefix).
COMMENT_PREFIX = "# nodeprov: "
_READ = 'if [ -e "$1" ]; then cat -- "$1"; else printf %s "$2"; fi'
FILE_MARKER = "\n@@nodeprov-file "
# Each file after a marker line; "DIR/*.EXT" stands for the existing files it matches.
_READ_MANY = r"""absent=$1; shift
show() { printf '\n@@nodeprov-file %s\n' "$1"; if [ -e "$1" ]; then cat -- "$1"
  else printf %s "$absent"; fi; }
for arg do
  case $arg in
    *'/*.'*) for path in "${arg%/*}"/*."${arg##*.}"; do [ ! -e "$path" ] || show "$path"; done ;;
    *) show "$arg" ;;
  esac
done
"""


def read_probe(path: str) -> Probe:
    """A probe printing the file, or ABSENT when it does not exist."""
    return Probe(("sh", "-c", _READ, "nodeprov-read", path, ABSENT))


def read_many_probe(*paths: str) -> Probe:
    """A probe printing several files at once; ``"DIR/*.EXT"`` reads every such file in DIR.

        read_many_probe("/etc/hosts", "/etc/cloud/cloud.cfg.d/*.cfg")
    """
    return Probe(("sh", "-c", _READ_MANY, "nodeprov-read", ABSENT, *paths))


def observed_files(observed: str) -> dict[str, str | None]:
    """{path: text, None when absent} from ``read_many_probe``'s output, texts kept exactly."""
    found: dict[str, str | None] = {}
    for chunk in observed.split(FILE_MARKER)[1:]:
        path, _, text = chunk.partition("\n")
        found[path] = observed_text(text)
    return found


def observed_text(observed: str) -> str | None:
    """The file's text from ``read_probe``'s output, None when absent."""
    return None if observed == ABSENT else observed


def begin_marker(name: str) -> str:
    return f"# BEGIN nodeprov {name} (managed by nodeprov; edits inside are overwritten)"


def end_marker(name: str) -> str:
    return f"# END nodeprov {name}"


def find_block(text: str, name: str) -> tuple[int, int] | None:
    """Line indexes (begin, end) of the block's markers, or None."""
    lines = text.splitlines()
    begin = next((i for i, line in enumerate(lines)
                  if line.startswith(f"# BEGIN nodeprov {name}")), None)
    if begin is None:
        return None
    end = next((i for i in range(begin + 1, len(lines)) if lines[i] == end_marker(name)), None)
    return None if end is None else (begin, end)


def block_lines(text: str, name: str) -> list[str] | None:
    """The lines inside the block, None when there is no block."""
    found = find_block(text, name)
    return None if found is None else text.splitlines()[found[0] + 1:found[1]]


def replace_block(text: str, name: str, lines: Sequence[str]) -> str:
    """Put ``lines`` in the named block (appended when missing); lines outside are kept as is."""
    block = [begin_marker(name), *lines, end_marker(name)]
    found = find_block(text, name)
    if found is None:
        prefix = text if not text or text.endswith("\n") else text + "\n"
        return prefix + "\n".join(block) + "\n"
    kept = text.splitlines(keepends=True)
    return "".join(kept[:found[0]]) + "\n".join(block) + "\n" + "".join(kept[found[1] + 1:])


def remove_block(text: str, name: str) -> str:
    found = find_block(text, name)
    if found is None:
        return text
    kept = text.splitlines(keepends=True)
    return "".join(kept[:found[0]] + kept[found[1] + 1:])


def unified_diff(path: str, old: str | None, new: str) -> str:
    return "".join(difflib.unified_diff(
        (old or "").splitlines(keepends=True), new.splitlines(keepends=True),
        fromfile=path if old is not None else "/dev/null", tofile=path))
