"""Open a page in headless Chromium (Debian's ``chromium``, which scripts/setup.sh installs)::

    seen = open_page(Path("report.html"), tmp_path)     # the DOM Chromium built, its console
    seen.console                                        # [] for a page that logs nothing
    take_screenshot(Path("report.html"), Path("r.png"), tmp_path, height=2400)

``--enable-logging=stderr --v=0`` makes Chromium write every console message (errors, a
Content-Security-Policy refusal, an uncaught exception) to stderr as ``...:CONSOLE:N] "..."``;
no DevTools client is needed. Name lookups are mapped to nothing, so a page that tried to fetch
anything could only fail, and say so on the console.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

CHROMIUM = shutil.which("chromium")
CONSOLE = re.compile(r":CONSOLE(?::\d+|\(\d+\))\] (.*)")
TIMEOUT = 180  # seconds: a 128-node page on a busy 2-core machine


@dataclass(frozen=True)
class Seen:
    dom: str
    console: list[str]


def _chromium(profile: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM, "chromium is not installed"
    sandbox = ["--no-sandbox"] if os.geteuid() == 0 else []  # Chromium refuses root otherwise
    return subprocess.run(
        [CHROMIUM, "--headless", *sandbox, "--disable-gpu", "--no-first-run",
         "--enable-logging=stderr", "--v=0", f"--user-data-dir={profile}",
         "--host-resolver-rules=MAP * ~NOTFOUND", *arguments],
        capture_output=True, text=True, timeout=TIMEOUT, check=True)


def open_page(page: Path, profile: Path) -> Seen:
    done = _chromium(profile, "--dump-dom", page.resolve().as_uri())
    return Seen(done.stdout, [found[1] for found in CONSOLE.finditer(done.stderr)])


def take_screenshot(page: Path, png: Path, profile: Path, *, width: int = 1280,
                    height: int = 2000) -> list[str]:
    """The console messages while taking it."""
    done = _chromium(profile, "--hide-scrollbars", f"--window-size={width},{height}",
                     f"--screenshot={png.resolve()}", page.resolve().as_uri())
    return [found[1] for found in CONSOLE.finditer(done.stderr)]


def png_size(png: Path) -> tuple[int, int]:
    """Width and height from the PNG's IHDR chunk."""
    header = png.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n", f"{png} is not a PNG"
    return int.from_bytes(header[16:20], "big"), int.from_bytes(header[20:24], "big")
