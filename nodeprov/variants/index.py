"""Which variants of exactly one torch version the index in use publishes, read from the index:
by default PyTorch's per-variant pages (``https://download.pytorch.org/whl/cu129/torch/``, one
request per variant nodeprov knows for that release and its neighbours), or the inventory's own
sources (each ``pip_index_url``/``pip_extra_index_url``'s ``torch/`` page, each
``pip_find_links`` page)::

    pages = listing_pages("2.12.1", index_urls=(), find_links=(), rocm=False)
    builds = index_builds("2.12.1", pages, read_url)   # cu126, cu129, cu130, cu132 per platform

A page is the index's word: a wheel counts only when its file name is exactly
``torch-<version>+<variant>-<python>-<abi>-<platform>.whl``, and a page over ``MAX_PAGE_BYTES``
or with more than ``MAX_LINKS`` links is refused. A page the index answers 404 or 403 for lists
nothing (the variant was not published there); pages of which none lists any torch wheel are
no index's word (a proxy that refuses it, or its page of refusal), and raise
``IndexUnreadable`` as any other failure does: the caller falls back to nodeprov's table,
saying so. Architecture lists are not on the index: each variant takes the
table's for its release, else the newest known release's that built it
(``published.known_arch_list``); a variant no known release built has none, so it is chosen
only when ``torch_cuda`` names it.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from html.parser import HTMLParser
from typing import Any

from nodeprov.errors import NodeprovError
from nodeprov.variants import published
from nodeprov.variants.choose import INDEX_BASE, NoVariant, ReleaseBuilds, release_of

TIMEOUT_S = 10
MAX_PAGE_BYTES = 8 * 1024 * 1024
MAX_LINKS = 20_000
_ACCEPT = "application/vnd.pypi.simple.v1+json, text/html;q=0.9"
_TORCH_WHEEL = re.compile(r"torch-\d[^-]*-.+\.whl")  # of any version and variant


class IndexUnreadable(NodeprovError):
    """The index could not be read (not: it lists nothing); the message names the page."""


class NotPublished(NodeprovError):
    """The index says the page does not exist (HTTP 404 or 403)."""


def read_url(url: str) -> str:
    """GET one page (http, https or file) within ``TIMEOUT_S`` and ``MAX_PAGE_BYTES``."""
    if urllib.parse.urlsplit(url).scheme not in ("http", "https", "file"):
        raise IndexUnreadable(f"{url}: not an http, https or file URL (a path on the nodes?)")
    request = urllib.request.Request(url, headers={"Accept": _ACCEPT})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            body = _read_within(response, time.monotonic() + TIMEOUT_S, url)
    except urllib.error.HTTPError as error:
        if error.code in (403, 404):
            raise NotPublished(url) from None
        raise IndexUnreadable(f"{url}: HTTP {error.code}") from None
    except (OSError, ValueError) as error:
        raise IndexUnreadable(f"{url}: {error}") from None
    if len(body) > MAX_PAGE_BYTES:
        raise IndexUnreadable(f"{url}: larger than {MAX_PAGE_BYTES // 2**20} MiB")
    return str(body.decode("utf-8", "replace"))


def _read_within(response: Any, deadline: float, url: str) -> bytes:
    """At most MAX_PAGE_BYTES + 1 bytes of the body, by ``deadline``: urlopen's timeout bounds
    each read only, so a server that trickles bytes would hold the run for as long as it likes."""
    chunks: list[bytes] = []
    size = 0
    while size <= MAX_PAGE_BYTES:
        if time.monotonic() > deadline:
            raise IndexUnreadable(f"{url}: not read within {TIMEOUT_S} s")
        chunk = response.read1(min(65536, MAX_PAGE_BYTES + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.names: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href") if tag == "a" else None
        if href:
            path = urllib.parse.urlsplit(href).path
            self.names.append(urllib.parse.unquote(path.rsplit("/", 1)[-1]))
            if len(self.names) > MAX_LINKS:
                raise ValueError(f"more than {MAX_LINKS} links")


def file_names(page: str) -> list[str]:
    """The file names a PEP 503 (HTML) or PEP 691 (JSON) page links to."""
    if page.lstrip().startswith("{"):
        try:
            files = json.loads(page).get("files")
        except RecursionError:  # the json module's own limit, raised as no ValueError
            raise ValueError("JSON nested too deeply: not a PEP 691 project page") from None
        if not isinstance(files, list) or len(files) > MAX_LINKS:
            raise ValueError("not a PEP 691 project page")
        return [item["filename"] for item in files
                if isinstance(item, dict) and isinstance(item.get("filename"), str)]
    parser = _Links()
    parser.feed(page)
    return parser.names


def wheel_variants(version: str, names: Iterable[str]) -> dict[str, set[str]]:
    """platform -> variants of torch ``version`` among the file ``names``.

    >>> wheel_variants("2.9.1", ["torch-2.9.1+cu129-cp312-cp312-manylinux_2_28_x86_64.whl",
    ...                          "torch-2.9.10+cu130-cp312-cp312-manylinux_2_28_x86_64.whl"])
    {'x86_64': {'cu129'}}
    """
    pattern = re.compile(rf"torch-{re.escape(version)}\+(cu\d{{3}}|rocm\d+\.\d+(?:\.\d+)?)-"
                         r"cp\d{2,3}t?-(?:cp\d{2,3}t?|abi3|none)-(?:many)?linux[a-z0-9_.]*?(x86_64|aarch64)"
                         r"\.whl")
    found: dict[str, set[str]] = {}
    for name in names:
        match = pattern.fullmatch(name)
        if match:
            found.setdefault(match.group(2), set()).add(match.group(1))
    return found


def listing_pages(torch_version: str, index_urls: Sequence[str], find_links: Sequence[str],
                  rocm: bool) -> tuple[str, ...]:
    """The pages that list the release's wheels: the inventory's sources when it names any,
    else PyTorch's page of each variant its table knows for the release and its neighbours.

    >>> listing_pages("2.9.1", (), (), rocm=False)[:2]
    ('https://download.pytorch.org/whl/cu126/torch/', 'https://download.pytorch.org/whl/cu128/torch/')
    """
    if index_urls or find_links:
        return (*(f"{url.rstrip('/')}/torch/" for url in index_urls), *find_links)
    releases = published.releases_oldest_first()
    release = release_of(torch_version)
    near = ([r for r in releases if abs(_minor(r) - _minor(release)) <= 1]
            if release in releases else releases[-2:])
    variants = {v for r in near for built in published.CUDA_BUILDS[r].values() for v in built}
    if rocm:
        variants |= {v for r in near for v in published.ROCM_BUILDS.get(r, ())}
    return tuple(f"{INDEX_BASE}/{variant}/torch/" for variant in sorted(variants))


def index_builds(torch_version: str, pages: Sequence[str],
                 read: Callable[[str], str] | None = None) -> ReleaseBuilds:
    """The variants ``pages`` list for ``torch_version``, read in parallel (by ``read``, else
    by this module's ``read_url`` as it is at the call, so a test can replace it); IndexUnreadable
    when one page cannot be read, NoVariant when none lists a CUDA or ROCm wheel of it."""
    reader = read or read_url

    def one(url: str) -> tuple[dict[str, set[str]], bool]:
        """The page's variants of the version, and whether it lists any torch wheel at all."""
        try:
            names = file_names(reader(url))
        except NotPublished:
            return {}, False
        except ValueError as error:
            raise IndexUnreadable(f"{url}: {error}") from None
        return wheel_variants(torch_version, names), any(map(_TORCH_WHEEL.fullmatch, names))

    with ThreadPoolExecutor(max_workers=min(8, max(1, len(pages)))) as pool:
        answers = list(pool.map(one, pages))
    where = _describe(pages)
    if not any(lists_torch for _, lists_torch in answers):  # not the index's word: a proxy's
        raise IndexUnreadable(f"{where}: no page lists a torch wheel (HTTP 403 or 404 for each, "
                              "or pages that are no package index: a proxy that blocks it?)")
    found: dict[str, set[str]] = {}
    for page, _ in answers:
        for platform, variants in page.items():
            found.setdefault(platform, set()).update(variants)
    if not found:
        raise NoVariant(f"{where} lists no CUDA or ROCm wheel of torch {torch_version}; check "
                        "the version, or set torch_cuda (cpu, cuXYZ or rocmX.Y)")
    release = release_of(torch_version)
    table = published.CUDA_BUILDS.get(release, {})
    cuda = {platform: {variant: table.get(platform, {}).get(variant)
                       or published.known_arch_list(variant, platform)
                       for variant in sorted(variants) if variant.startswith("cu")}
            for platform, variants in found.items()}
    every = {variant for variants in found.values() for variant in variants}
    rocm = tuple(sorted(variant for variant in every if variant.startswith("rocm")))
    listed = ", ".join(sorted(every))
    return ReleaseBuilds(release, {platform: built for platform, built in cuda.items() if built},
                         rocm, source=f"{where} ({listed} listed for torch {torch_version})")


def _describe(pages: Sequence[str]) -> str:
    if all(page.startswith(INDEX_BASE + "/") for page in pages):
        return f"the index {INDEX_BASE}"
    return "the index " + ", ".join(dict.fromkeys(page.removesuffix("torch/").rstrip("/")
                                                  for page in pages))


def _minor(release: str) -> int:
    return int(release.split(".")[1])
