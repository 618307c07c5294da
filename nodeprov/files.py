"""Managed blocks in text files: pure edits, plus the probe that reads files.

    >>> text = replace_block("127.0.0.1 localhost\\n", "hosts", ["10.0.0.11 node1"])
    >>> print(text, end="")
    127.0.0.1 localhost
    # BEGIN nodeprov hosts (managed by nodeprov; edits inside are overwritten)
    10.0.0.11 node1
    # END nodeprov hosts
"""

from __future__ import annotations

import difflib
import secrets
from collections.abc import Mapping, Sequence

from nodeprov import validate
from nodeprov.tasks.base import Probe

# Starts a line nodeprov commented out (to revert: remove this prefix).
COMMENT_PREFIX = "# nodeprov: "
# `nodeprov_read ROOT PATH...`, a shell function the probes embed: every file read by ONE `head`
# (each program started costs the node ~1 ms of CPU); "DIR/*.EXT" stands for the files it matches.
# It prints ROOT, a line per path ("absent PATH"; "unreadable PATH" for a directory or a file it
# may not read; "read PATH"), then head's output: per file read, "==> ROOT/PATH <==\n" and its
# bytes, a "\n" before each header after the first. Exact for any text: ROOT is "/" spelled as 64
# random "/" or "/." (read_args, anew for each probe), which head prints as given and the kernel
# reads as "/", so a file could pass for a header only by guessing ROOT. Headers of plain paths
# could be faked by a file's text ("==> /etc/hosts <=="), and byte sizes would not survive invalid
# UTF-8 decoded as text. head -c takes no "all": the largest count it does.
READER = r"""nodeprov_read() {
  root=$1; shift; printf '%s\n' "$root"
  for arg do
    shift
    case $arg in
      *'/*.'*) for path in "${arg%/*}"/*."${arg##*.}"; do
                 [ ! -e "$path" ] || set -- "$@" "$path"; done ;;
      *) set -- "$@" "$arg" ;;
    esac
  done
  for path do
    shift
    case $path in *'
'*) continue ;; esac  # a name with a newline would end its line early (paths given never have one)
    if [ ! -e "$path" ]; then printf 'absent %s\n' "$path"
    elif [ -d "$path" ] || [ ! -r "$path" ]; then printf 'unreadable %s\n' "$path"
    else printf 'read %s\n' "$path"; set -- "$@" "$root$path"; fi
  done
  [ "$#" -eq 0 ] || head -v -c 9223372036854775807 -- "$@" 2>/dev/null
}
"""
_READ_MANY = READER + 'nodeprov_read "$@"\n'


def read_args(*paths: str) -> tuple[str, ...]:
    """The arguments of ``nodeprov_read`` (READER) for these paths: a fresh ROOT first."""
    bits = secrets.randbits(64)
    return ("".join("/." if bits >> bit & 1 else "/" for bit in range(64)), *paths)


def read_many_probe(*paths: str) -> Probe:
    """A probe printing several files at once; ``"DIR/*.EXT"`` reads every such file in DIR.

        read_many_probe("/etc/hosts", "/etc/cloud/cloud.cfg.d/*.cfg")
    """
    return Probe(("sh", "-c", _READ_MANY, "nodeprov-read", *read_args(*paths)))


def observed_files(observed: str, *, unreadable: str | None = "") -> dict[str, str | None]:
    """{path: text, None when absent} from what ``nodeprov_read`` printed, texts kept exactly;
    a file that exists but cannot be read (a directory) reads as ``unreadable``.

    >>> observed_files(files_output({"/etc/hosts": "127.0.0.1 localhost", "/etc/x": None}))
    {'/etc/hosts': '127.0.0.1 localhost', '/etc/x': None}
    """
    root, _, rest = observed.partition("\n")
    header = f"==> {root}"  # the random ROOT: never in a file's text
    statuses, read, contents = rest.partition(header)
    texts: dict[str, str] = {}
    for chunk in contents.split(f"\n{header}") if read else ():
        path, _, text = chunk.partition(" <==\n")  # a path holds no "\n"
        texts[path] = text
    found: dict[str, str | None] = {}
    for line in statuses.split("\n")[:-1]:
        status, _, path = line.partition(" ")
        found[path] = (None if status == "absent" else
                       texts.get(path, unreadable) if status == "read" else unreadable)
    return found


def files_output(found: Mapping[str, str | None], root: str = "/./") -> str:
    """What ``nodeprov_read`` prints for these files (None: absent), for tests and records.

    >>> files_output({"/a": "x", "/b": None, "/c": ""})
    '/./\\nread /a\\nabsent /b\\nread /c\\n==> /.//a <==\\nx\\n==> /.//c <==\\n'
    """
    statuses = "".join(f"{'absent' if text is None else 'read'} {path}\n"
                       for path, text in found.items())
    return f"{root}\n{statuses}" + "\n".join(f"==> {root}{path} <==\n{text}"
                                              for path, text in found.items() if text is not None)


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
    """Line indexes (begin, end) of the block's markers, or None."""
    lines = split_lines(text)
    begin = next((i for i, line in enumerate(lines)
                  if line.startswith(f"# BEGIN nodeprov {name}")), None)
    if begin is None:
        return None
    end = next((i for i in range(begin + 1, len(lines)) if lines[i] == end_marker(name)), None)
    return None if end is None else (begin, end)


def block_lines(text: str, name: str) -> list[str] | None:
    """The lines inside the block, None when there is no block."""
    found = find_block(text, name)
    return None if found is None else split_lines(text)[found[0] + 1:found[1]]


def replace_block(text: str, name: str, lines: Sequence[str]) -> str:
    """Put ``lines`` in the named block (appended when missing); lines outside are kept as is.
    Each line is checked again where it is used: one line, no control characters (ValueError),
    whatever task made it."""
    for line in lines:
        validate.text_value(line)
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
