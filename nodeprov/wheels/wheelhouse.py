"""Where wheels come from: pip's source options, and the wheelhouse on this machine.

    >>> Sources().options("cpu")
    ('--index-url', 'https://download.pytorch.org/whl/cpu', '--extra-index-url', 'https://pypi.org/simple')

By default a node installs from the PyTorch index of its variant, with PyPI as an extra index for
everything else: torch's local label (``+cpu``, ``+cu130``) exists only on the PyTorch index, so
PyPI cannot shadow it. Given ``index_url``, ``extra_index_urls`` or ``find_links`` (a mirror, an
air-gapped cluster), those replace the defaults entirely.

In wheelhouse mode this machine downloads what the nodes need once per variant, into
``$XDG_CACHE_HOME/nodeprov/wheelhouse/<variant>/<target>/``, under a file lock, so that parallel
hosts (and parallel runs) share one download; the nodes then install from the pushed copy with
``--no-index``. The runner calls it through a ``Local`` action::

    python -m nodeprov.wheels.wheelhouse DEST PIP-DOWNLOAD-ARGUMENTS...
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
from dataclasses import dataclass
from pathlib import Path

from nodeprov.util import validate
from nodeprov.variants.choose import index_url

PYPI = "https://pypi.org/simple"
LOG_NAME = "fetch.log"
_OLDEST_GLIBC_MINOR = 17  # manylinux2014, the oldest tag current wheels use


@dataclass(frozen=True)
class Sources:
    """pip's source options as the inventory gives them (empty: the variant's defaults)."""

    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    no_index: bool = False  # a node's pip.conf may say so (pipconfig); the inventory cannot

    @property
    def custom(self) -> bool:
        return bool(self.index_url or self.extra_index_urls or self.find_links or self.no_index)

    def options(self, variant: str) -> tuple[str, ...]:
        if not self.custom:
            return ("--index-url", index_url(variant), "--extra-index-url", PYPI)
        options = ["--no-index"] if self.no_index else []
        options += ["--index-url", self.index_url] if self.index_url else []
        for url in self.extra_index_urls:
            options += ["--extra-index-url", url]
        for link in self.find_links:
            options += ["--find-links", link]
        return tuple(options)

    def describe(self, variant: str) -> str:
        """Where wheels come from, for a change summary: "/opt/wheels", "https://..."."""
        if not self.custom:
            return index_url(variant)
        return ", ".join([*self.find_links, *([] if self.no_index else filter(
            None, [self.index_url, *self.extra_index_urls]))]) or "no index (--no-index)"


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


def download_args(python: str, glibc: tuple[int, int], arch: str, sources: Sequence[str],
                  specs: Sequence[str]) -> tuple[str, ...]:
    """``pip download`` arguments for a node's interpreter and platform, wheels only."""
    platforms = [arg for tag in manylinux_platforms(glibc, arch) for arg in ("--platform", tag)]
    return ("download", "--only-binary=:all:", "--implementation", "cp", "--python-version",
            python, *platforms, "--no-input", "--progress-bar", "off", *sources, "--", *specs)


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "nodeprov" / "wheelhouse"


def fetch(dest: Path, pip_args: Sequence[str]) -> bool:
    """Run ``pip download pip_args`` into ``dest`` unless an earlier run did; True if it ran.

    A stamp named after the arguments marks a finished download; the lock makes every other
    caller wait for it, so N hosts asking at once cause one download.
    """
    dest.mkdir(parents=True, exist_ok=True)
    stamp = dest / (".done-" + hashlib.sha256("\0".join(pip_args).encode()).hexdigest()[:16])
    with open(dest / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists():
            return False
        argv = [sys.executable, "-m", "pip", *pip_args[:1], "--dest", str(dest), *pip_args[1:]]
        started = time.monotonic()
        subprocess.run(argv, check=True)
        stamp.touch()
        with open(dest / LOG_NAME, "a") as log:
            log.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} downloaded in "
                      f"{time.monotonic() - started:.0f}s: pip {' '.join(pip_args)}\n")
        return True


def main(argv: Sequence[str]) -> int:
    if len(argv) < 2:
        sys.stderr.write("usage: python -m nodeprov.wheels.wheelhouse DEST "
                         "PIP-DOWNLOAD-ARGUMENTS...\n")
        return 2
    try:
        fetch(Path(argv[0]), argv[1:])
    except subprocess.CalledProcessError as error:
        sys.stderr.write(f"pip download exited {error.returncode}: see its output above; does "
                         "this machine reach the index (pip_index_url, pip_find_links)?\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
