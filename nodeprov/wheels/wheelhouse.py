"""The wheelhouse on this machine: what it downloads for the nodes, once.

    args = download_args("3.11", (2, 36), "x86_64", sources, ["torch==2.13.0+cpu"])
    fetch(Path(local_dir("cpu", "torch-2.13.0-cp311-glibc2.36-x86_64")), args)

In wheelhouse mode this machine downloads what the nodes need once per variant (and uv's wheel
once per platform), into ``$XDG_CACHE_HOME/nodeprov/wheelhouse/<variant>/<target>/``, under a
file lock, so that parallel hosts (and parallel runs) share one download; the nodes then install
from the pushed copy with ``--no-index``. pip's output goes to ``.fetch.log`` in that folder,
credentials masked (a dot file: never sent to a node, never served); a failed download raises
DownloadFailed with pip's own reason.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from nodeprov.errors import NodeprovError
from nodeprov.util import validate
from nodeprov.util.redact import mask_urls
from nodeprov.util.units import clipped
from nodeprov.wheels import trust

LOG_NAME = ".fetch.log"
_OLD_LOG = "fetch.log"  # where earlier versions logged, inside what is sent to the nodes
_OLDEST_GLIBC_MINOR = 17  # manylinux2014, the oldest tag current wheels use


def manylinux_platforms(glibc: tuple[int, int], arch: str) -> tuple[str, ...]:
    """Every manylinux tag a node with this glibc runs, newest first (pip download does not
    widen ``--platform`` by itself).

    >>> manylinux_platforms((2, 18), "x86_64")
    ('manylinux_2_18_x86_64', 'manylinux_2_17_x86_64', 'manylinux2014_x86_64')
    """
    major, minor = glibc
    tags = tuple(f"manylinux_{major}_{m}_{arch}" for m in range(minor, _OLDEST_GLIBC_MINOR - 1, -1))
    return (*tags, f"manylinux2014_{arch}") if minor >= _OLDEST_GLIBC_MINOR else tags


def target_name(python: str, glibc: tuple[int, int], arch: str) -> str:
    """A wheelhouse folder name for one kind of node: ``cp311-glibc2.36-x86_64``; the node's
    word for its Python and arch is checked first (it becomes a path on this machine)."""
    if not (re.fullmatch(r"[0-9]{1,2}\.[0-9]{1,3}", python)
            and re.fullmatch(r"[a-z0-9_]{1,16}", arch)):
        raise ValueError(f"the node's Python {python[:20]!r} or arch {arch[:20]!r} cannot name "
                         "a wheelhouse folder (expected e.g. 3.11 and x86_64)")
    return f"cp{python.replace('.', '')}-glibc{glibc[0]}.{glibc[1]}-{arch}"


def local_dir(variant: str, name: str) -> str:
    """A wheelhouse folder on this machine, proven to be under ``cache_root()``: each part
    is one plain name (validate.under).

        local_dir("cu128", "torch-2.13.0-cp311-glibc2.36-x86_64")
    """
    return validate.under(str(cache_root()), variant, name)


def platform_args(python: str, glibc: tuple[int, int], arch: str) -> tuple[str, ...]:
    """pip's options picking a node's wheels: its interpreter and platform.

    >>> platform_args("3.11", (2, 17), "aarch64")[:4]
    ('--implementation', 'cp', '--python-version', '3.11')
    """
    platforms = [arg for tag in manylinux_platforms(glibc, arch) for arg in ("--platform", tag)]
    return ("--implementation", "cp", "--python-version", python, *platforms)


def download_args(python: str, glibc: tuple[int, int], arch: str, sources: Sequence[str],
                  specs: Sequence[str]) -> tuple[str, ...]:
    """``pip download`` arguments for a node's interpreter and platform, wheels only."""
    return ("download", "--only-binary=:all:", *platform_args(python, glibc, arch),
            "--no-input", "--progress-bar", "off", *sources, "--", *specs)


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "nodeprov" / "wheelhouse"


class DownloadFailed(NodeprovError):
    """pip on this machine could not download a wheel set; the message is pip's reason."""


def fetch(dest: Path, pip_args: Sequence[str]) -> bool:
    """Run ``pip download pip_args`` into ``dest`` unless an earlier run did; True if it ran.

    A stamp named after the arguments marks a finished download; the lock makes every other
    caller wait for it, so N hosts asking at once cause one download.
    """
    dest.mkdir(parents=True, exist_ok=True)
    stamp = dest / (".done-" + hashlib.sha256("\0".join(pip_args).encode()).hexdigest()[:16])
    with open(dest / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        (dest / _OLD_LOG).unlink(missing_ok=True)  # pip's command lines, credentials included
        if stamp.exists():
            return False
        argv = [sys.executable, "-m", "pip", *pip_args[:1], "--dest", str(dest), *pip_args[1:]]
        started = time.monotonic()
        done = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              check=False)
        output = mask_urls(done.stdout + done.stderr)
        with open(dest / LOG_NAME, "a") as log:
            log.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} pip exited {done.returncode} "
                      f"after {time.monotonic() - started:.0f}s: pip "
                      f"{mask_urls(' '.join(pip_args))}\n{output}\n")
        if done.returncode != 0:
            raise DownloadFailed(pip_reason(output, done.returncode))
        stamp.touch()
        return True


def pip_reason(output: str, exit_code: int) -> str:
    """pip's own reason for a failure, one line: a certificate it refused (``trust``), else its
    last ``ERROR:`` line, else its last line.

    >>> pip_reason("Looking in links: /w\\nERROR: No matching distribution found for uv==9\\n", 1)
    'No matching distribution found for uv==9'
    """
    refused = trust.untrusted(output)
    if refused:
        return f"{refused}; {trust.HERE}"
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    errors = [line.removeprefix("ERROR:").strip() for line in lines if line.startswith("ERROR:")]
    reason = (errors or lines or [f"pip exited {exit_code}"])[-1]
    return clipped(reason, 200)
