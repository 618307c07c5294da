"""Folder mirrors for the tests: a ``file://`` simple index (PEP 503) pip reads as a site's
mirror, built from wheels already on this machine or from small stand-in wheels.

    index = simple_index(tmp_path / "mirror", [stand_in("tiny", "1.0", requires=["dep"]),
                                               stand_in("dep", "2.0")])
    url = uv_index()    # uv's wheel (pip download once, cached) as a file:// index

The index pages carry each file's sha256 in the link, as PyPI's do.
"""

from __future__ import annotations

import fcntl
import hashlib
import html
import io
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Sequence
from pathlib import Path

from nodeprov.wheels.installer import UV_VERSION

UV_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nodeprov-tests"


def stand_in(name: str, version: str, requires: Sequence[str] = ()) -> tuple[str, bytes]:
    """A pure-Python wheel pip can resolve and install: (file name, bytes)."""
    stem = name.replace("-", "_")  # a wheel's name part never holds "-"
    dist = f"{stem}-{version}.dist-info"
    files = {f"{stem}/__init__.py": f"VERSION = {version!r}\n",
             f"{dist}/METADATA": "Metadata-Version: 2.1\n" f"Name: {name}\nVersion: {version}\n"
                                 + "".join(f"Requires-Dist: {r}\n" for r in requires),
             f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: nodeprov-tests\n"
                              "Root-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "".join(f"{path},,\n" for path in files) + f"{dist}/RECORD,,\n"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as wheel:
        for path, text in {**files, f"{dist}/RECORD": record}.items():
            wheel.writestr(path, text)
    return f"{stem}-{version}-py3-none-any.whl", buffer.getvalue()


def project_of(wheel: str) -> str:
    """The PEP 503 normalized project name of a wheel file.

    >>> project_of("Zope.Interface-7.0-py3-none-any.whl")
    'zope-interface'
    """
    return re.sub(r"[-_.]+", "-", wheel.split("-")[0]).lower()


def file_link(wheel: str, data: bytes) -> str:
    """A project page's link to ``../../files/wheel``, its sha256 in the URL as PyPI gives it."""
    name = html.escape(wheel)
    return f'<a href="../../files/{name}#sha256={hashlib.sha256(data).hexdigest()}">{name}</a>'


def project_page(links: Sequence[str]) -> str:
    """A PEP 503 project page of ``links``."""
    return "<!DOCTYPE html><html><body>\n" + "<br>\n".join(links) + "\n</body></html>\n"


def simple_index(root: Path, wheels: Sequence[tuple[str, bytes]]) -> str:
    """``root/files/`` holding the wheels, ``root/simple/`` a PEP 503 index of them: the index's
    ``file://`` URL."""
    (root / "files").mkdir(parents=True, exist_ok=True)
    projects: dict[str, list[str]] = {}
    for name, data in wheels:
        (root / "files" / name).write_bytes(data)
        projects.setdefault(project_of(name), []).append(file_link(name, data))
    for project, links in projects.items():
        (root / "simple" / project).mkdir(parents=True, exist_ok=True)
        (root / "simple" / project / "index.html").write_text(project_page(links))
    return f"file://{root}/simple"


def uv_index() -> str:
    """A file:// index holding uv's wheel for x86_64 glibc nodes, as a site's mirror would:
    downloaded once (by pip, from this machine's sources) into ``UV_CACHE``, under a lock."""
    root = UV_CACHE / f"uv-{UV_VERSION}-index"
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = sorted((root / "files").glob("uv-*.whl")) if (root / "files").is_dir() else []
        if not found:
            download = root / "download"
            subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                            "--only-binary=:all:", "--platform", "manylinux_2_17_x86_64",
                            "--dest", str(download), f"uv=={UV_VERSION}"], check=True)
            found = sorted(download.glob("uv-*.whl"))
            return simple_index(root, [(path.name, path.read_bytes()) for path in found])
    return f"file://{root}/simple"


def uv_binary(folder: Path) -> Path:
    """uv itself, for this machine (x86_64 glibc), from ``uv_index``'s wheel, in ``folder``."""
    uv_index()
    (wheel,) = (UV_CACHE / f"uv-{UV_VERSION}-index" / "files").glob("uv-*.whl")
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as archive:
        (folder / "uv").write_bytes(archive.read(f"uv-{UV_VERSION}.data/scripts/uv"))
    (folder / "uv").chmod(0o755)
    return folder / "uv"
