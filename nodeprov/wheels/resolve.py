"""download_once's trust anchor: this machine resolves the wheel set for the nodes' platform
and takes each file's sha256 from the index (pip's own report), so the node that downloads
for the others is checked, never believed.

    pinned = resolve(platform_args, sources, ("torch==2.13.0+cpu", "numpy"))
    text = requirements(pinned)     # what the seed downloads: name==version --hash=sha256:...

pip reads only the metadata where the index serves it apart (PEP 658: PyPI and
download.pytorch.org do), so this costs no wheel download there.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from nodeprov.util.redact import mask_urls
from nodeprov.wheels.wheelhouse import DownloadFailed, pip_reason

_SHA256 = re.compile(r"[0-9a-f]{64}")
_WHEEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,254}\.whl")


@dataclass(frozen=True)
class Pinned:
    """One wheel of a resolved set: its requirement line's parts and the file it must be."""

    name: str
    version: str
    filename: str
    sha256: str
    url: str = ""  # set for a direct reference (``pkg @ https://...``) only

    @property
    def line(self) -> str:
        pin = f"{self.name} @ {self.url}" if self.url else f"{self.name}=={self.version}"
        return f"{pin} --hash=sha256:{self.sha256}"


def resolve(platform_args: tuple[str, ...], sources: tuple[str, ...],
            specs: tuple[str, ...]) -> tuple[Pinned, ...]:
    """What pip on this machine would install of ``specs`` on a node (``platform_args``:
    --python-version, --platform, ...), installing nothing; DownloadFailed with pip's reason."""
    argv = (sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
            "--report", "-", "--only-binary=:all:", *platform_args, "--no-input",
            "--progress-bar", "off", "--disable-pip-version-check", *sources, "--", *specs)
    done = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          check=False)
    if done.returncode != 0:
        raise DownloadFailed(pip_reason(mask_urls(done.stdout + done.stderr), done.returncode))
    try:
        return parse_report(done.stdout)
    except (ValueError, KeyError, AttributeError) as error:
        raise DownloadFailed(f"pip's report: {mask_urls(str(error))}") from None


def parse_report(text: str) -> tuple[Pinned, ...]:
    """The wheels of pip's installation report; ValueError naming one without a sha256 from
    the index (then nothing can be checked: the nodes download their own)."""
    pinned = []
    for item in json.loads(text).get("install", []):
        info, meta = item.get("download_info") or {}, item.get("metadata") or {}
        url = str(info.get("url", ""))
        name = unquote(urlsplit(url).path.rpartition("/")[2])
        digest = str((info.get("archive_info") or {}).get("hashes", {}).get("sha256", ""))
        if not _WHEEL.fullmatch(name):
            raise ValueError(f"{meta.get('name')}: {name[:80]!r} is not a wheel")
        if not _SHA256.fullmatch(digest):
            raise ValueError(f"{name}: the index gives no sha256")
        pinned.append(Pinned(str(meta["name"]), str(meta["version"]), name, digest,
                             url if item.get("is_direct") else ""))
    return tuple(pinned)


def requirements(pinned: tuple[Pinned, ...]) -> str:
    """A requirements file pip downloads exactly these files from (``--hash``: pip's
    hash-checking mode, so the seed's own pip refuses any other file)."""
    return "".join(f"{p.line}\n" for p in pinned)
