"""Which variants of a torch release an index publishes, for releases newer than nodeprov's
table: the index's PEP 503 page for torch lists files such as
``torch-2.15.0+cu130-cp312-cp312-manylinux_2_28_x86_64.whl``::

    builds = index_builds("2.15.0", "https://download.pytorch.org/whl", read_url)

Architecture lists are not on the index: each variant borrows that of the newest known release
that built it (``published.known_arch_list``); a variant no known release built has none, so
it is chosen only when ``torch_cuda`` names it.
"""

from __future__ import annotations

import re
import urllib.request
from collections.abc import Callable

from nodeprov.variants import published
from nodeprov.variants.choose import NoVariant, ReleaseBuilds, release_of

_TIMEOUT_S = 15
# "+" may be written %2B in links (PyTorch's own index does so in its hrefs)
_WHEEL_RE = (r"torch-{version}(?:\+|%2B)(cu\d{{3}}|rocm\d+\.\d+(?:\.\d+)?)-[^\s\"'<>/]*?"
             r"(x86_64|aarch64)\.whl")


def read_url(url: str) -> str:
    """GET ``url`` as text (the index page), within a timeout."""
    with urllib.request.urlopen(url, timeout=_TIMEOUT_S) as response:
        return str(response.read().decode("utf-8", "replace"))


def index_builds(torch_version: str, index: str,
                 read: Callable[[str], str] = read_url) -> ReleaseBuilds:
    """The release's variants as the index lists them; refuses clearly when it cannot tell."""
    url = f"{index.rstrip('/')}/torch/"
    newest = published.releases_oldest_first()[-1]
    try:
        page = read(url)
    except (OSError, ValueError) as error:
        raise NoVariant(
            f"torch {torch_version} is not in nodeprov's table (releases through {newest}) and "
            f"the index {url} could not be read ({error}); set torch_cuda (cpu, cuXYZ or "
            "rocmX.Y) to name the build, or pick a release through " + newest) from None
    cuda: dict[str, dict[str, str | None]] = {}
    rocm: set[str] = set()
    pattern = re.compile(_WHEEL_RE.format(version=re.escape(torch_version)))
    for variant, platform in pattern.findall(page):
        if variant.startswith("rocm"):
            rocm.add(variant)
        else:
            cuda.setdefault(platform, {})[variant] = published.known_arch_list(variant)
    if not cuda and not rocm:
        raise NoVariant(f"the index {url} lists no CUDA or ROCm wheel of torch {torch_version}; "
                        "check the version, or set torch_cuda (cpu, cuXYZ or rocmX.Y)")
    return ReleaseBuilds(release_of(torch_version), cuda, tuple(sorted(rocm)),
                         source=f"the index {url}")
