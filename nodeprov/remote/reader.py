"""Read files on a node exactly, many in one probe; the text of each, byte for byte.

    probe = read_many_probe("/etc/hosts", "/etc/sysctl.d/*.conf")   # in the facts round trip
    observed_files(observed)["/etc/hosts"]       # its text, or None when absent
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping

from nodeprov.remote.actions import Probe

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
