"""The variants of an exact torch version, read from the index: PyTorch's real pages
(tests/data/torch-index, served on 127.0.0.1), a uv.lock resolved against its cu129 index, and
pages that are not what they should be."""

from __future__ import annotations

import http.server
import json
import re
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from nodeprov.tasks.torch.choice import release_builds
from nodeprov.variants import index, published
from nodeprov.variants.choose import INDEX_BASE, NoVariant, choose_cluster_variant, known_builds
from nodeprov.variants.fit import NodeGpus
from nodeprov.variants.index import (
    MAX_LINKS,
    MAX_PAGE_BYTES,
    IndexUnreadable,
    file_names,
    index_builds,
    listing_pages,
    wheel_variants,
)
from nodeprov.variants.index import read_url as real_read_url

DATA = Path(__file__).parents[1] / "data" / "torch-index"
Pages = dict[str, tuple[int, bytes]]  # path -> (status, body): what serve() answers
RECORDED = ("cu126", "cu128", "cu129", "cu130")  # download.pytorch.org/whl/<variant>/torch/


def recorded_page(variant: str) -> str:
    return (DATA / f"download.pytorch.org-whl-{variant}-torch.html").read_text()


@pytest.fixture()
def serve() -> Iterator[Pages]:
    """An index on 127.0.0.1: fill the mapping path -> (status, body); other paths are 404.
    The fixture's value carries the base URL under the key "" (status 0)."""
    pages: Pages = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            status, body = pages.get(self.path, (404, b""))
            self.send_response(status)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    pages[""] = (0, f"http://127.0.0.1:{server.server_address[1]}".encode())
    try:
        yield pages
    finally:
        server.shutdown()
        server.server_close()


def base(pages: Mapping[str, tuple[int, bytes]]) -> str:
    return pages[""][1].decode()


def pytorch_like(pages: Pages) -> list[str]:
    """Serve the recorded pages in PyTorch's layout; the page URLs."""
    for variant in RECORDED:
        pages[f"/whl/{variant}/torch/"] = (200, recorded_page(variant).encode())
    return [f"{base(pages)}/whl/{variant}/torch/" for variant in (*RECORDED, "cu132")]


@pytest.mark.parametrize("version", ["2.6.0", "2.7.0", "2.7.1", "2.8.0", "2.9.0", "2.9.1",
                                     "2.10.0"])
def test_the_table_lists_what_pytorchs_index_published(version: str) -> None:
    # the recorded pages, read as nodeprov reads an index, are the oracle for the table
    listed: dict[str, set[str]] = {platform: set() for platform in ("x86_64", "aarch64")}
    for variant in RECORDED:
        for platform, variants in wheel_variants(version, file_names(recorded_page(variant))
                                                 ).items():
            listed[platform] |= variants
    builds = known_builds(version)
    assert builds is not None
    table = {platform: set(builds.cuda.get(platform, {})) & set(RECORDED)
             for platform in listed}
    assert table == listed


def test_2_12_1_has_cu129_that_2_12_0_lacks() -> None:
    # a uv.lock resolved against download.pytorch.org/whl/cu129 names the wheels it found
    names = re.findall(r'/whl/cu129/([^"]+\.whl)"', (DATA / "uv-lock-torch-2.12.1-cu129.txt")
                       .read_text())
    assert wheel_variants("2.12.1", [name.replace("%2B", "+") for name in names]) == {
        "x86_64": {"cu129"}, "aarch64": {"cu129"}}
    for platform in ("x86_64", "aarch64"):
        assert "cu129" in known_builds("2.12.1").cuda[platform]  # type: ignore[union-attr]
        assert "cu129" not in known_builds("2.12.0").cuda[platform]  # type: ignore[union-attr]


def test_variants_of_the_exact_version_from_pytorchs_pages(serve: Pages) -> None:
    builds = index_builds("2.9.1", pytorch_like(serve), real_read_url)  # cu132: 404, none
    assert sorted(builds.cuda["x86_64"]) == ["cu126", "cu128", "cu129", "cu130"]
    assert sorted(builds.cuda["aarch64"]) == ["cu126", "cu128", "cu129", "cu130"]
    assert builds.cuda["x86_64"]["cu129"] == published.CUDA_BUILDS["2.9"]["x86_64"]["cu129"]
    assert builds.source == (f"the index {base(serve)}/whl/cu126, {base(serve)}/whl/cu128, "
                             f"{base(serve)}/whl/cu129, {base(serve)}/whl/cu130, "
                             f"{base(serve)}/whl/cu132 (cu126, cu128, cu129, cu130 listed for "
                             "torch 2.9.1)")
    # an H100 on driver 535: the index's cu129, where the table of main said cu128
    h100 = NodeGpus("x86_64", (535, 129, 3), gpus=(("NVIDIA H100", (9, 0)),))
    assert choose_cluster_variant(builds, {"h": h100}).variant == "cu129"
    # 2.8.0 on aarch64: cu129 only, as the table says
    assert sorted(index_builds("2.8.0", pytorch_like(serve), real_read_url).cuda["aarch64"]) \
        == ["cu129"]


def test_pages_of_a_release_and_of_the_inventorys_sources() -> None:
    pages = listing_pages("2.9.1", (), (), rocm=False)
    assert pages == tuple(f"{INDEX_BASE}/{v}/torch/" for v in ("cu126", "cu128", "cu129",
                                                                "cu130"))
    assert f"{INDEX_BASE}/rocm6.4/torch/" in listing_pages("2.9.1", (), (), rocm=True)
    # a release the table does not know: the variants of its two newest releases
    assert listing_pages("2.15.0", (), (), rocm=False) == listing_pages("2.14.0", (), (), False)
    assert listing_pages("2.9.1", ("http://mirror/whl/cu128/",), ("http://mirror/wheels/",),
                         rocm=False) == ("http://mirror/whl/cu128/torch/", "http://mirror/wheels/")


def test_a_release_newer_than_the_table_takes_known_architectures(serve: Pages) -> None:
    names = ["torch-2.15.0+cu126-cp312-cp312-manylinux_2_28_x86_64.whl",
             "torch-2.15.0+cu130-cp312-cp312-manylinux_2_28_aarch64.whl",
             "torch-2.15.0+cu136-cp312-cp312-manylinux_2_28_x86_64.whl",
             "torch-2.15.0+rocm7.14-cp312-cp312-manylinux_2_28_x86_64.whl"]
    serve["/simple/torch/"] = (200, "".join(
        f'<a href="/whl/{name.replace("+", "%2B")}#sha256=00">{name}</a>\n' for name in names
    ).encode())
    builds = index_builds("2.15.0", [f"{base(serve)}/simple/torch/"], real_read_url)
    assert dict(builds.cuda["x86_64"]) == {
        "cu126": published.CUDA_BUILDS["2.14"]["x86_64"]["cu126"], "cu136": None}
    assert dict(builds.cuda["aarch64"]) == {
        "cu130": published.CUDA_BUILDS["2.14"]["aarch64"]["cu130"]}
    assert builds.rocm == ("rocm7.14",)
    with pytest.raises(NoVariant, match=r"lists no CUDA or ROCm wheel of torch 2\.16\.0"):
        index_builds("2.16.0", [f"{base(serve)}/simple/torch/"], real_read_url)


def test_pep_691_json_pages(serve: Pages) -> None:
    serve["/simple/torch/"] = (200, json.dumps({"files": [
        {"filename": "torch-2.9.1+cu129-cp312-cp312-manylinux_2_28_x86_64.whl"},
        {"filename": 7}, "junk"]}).encode())
    builds = index_builds("2.9.1", [f"{base(serve)}/simple/torch/"], real_read_url)
    assert list(builds.cuda["x86_64"]) == ["cu129"]


@pytest.mark.parametrize("name", [
    "torch-2.9.1+cu129-cp312-cp312-manylinux_2_28_x86_64.whl.metadata",
    "torch-2.9.1+cu129x-cp312-cp312-manylinux_2_28_x86_64.whl",
    "torch-2.9.10+cu129-cp312-cp312-manylinux_2_28_x86_64.whl",
    "torch-2.9.1+cu129-cp312-cp312-win_amd64.whl",
    "torch-2.9.1+cu129-cp312-cp312-macosx_11_0_x86_64.whl",  # not linux, though x86_64
    "torch-2.9.1+cu129-cp312-cp312-manylinux_2_28_x86_64.whl/../../etc",
    "torch-2.9.1-cp312-cp312-manylinux_2_28_x86_64.whl",  # no variant label: not counted
])
def test_names_that_are_not_exactly_a_linux_wheel_of_the_version_do_not_count(name: str) -> None:
    assert wheel_variants("2.9.1", [name]) == {}


def test_pages_too_large_or_too_long_are_refused(serve: Pages) -> None:
    serve["/big/torch/"] = (200, b"x" * (MAX_PAGE_BYTES + 1))
    serve["/long/torch/"] = (200, b'<a href="a">a</a>' * (MAX_LINKS + 1))
    serve["/broken/torch/"] = (500, b"")
    for path, why in (("/big/", "larger than 8 MiB"), ("/long/", "more than 20000 links"),
                      ("/broken/", "HTTP 500")):
        with pytest.raises(IndexUnreadable, match=why):
            index_builds("2.9.1", [f"{base(serve)}{path}torch/"], real_read_url)
    with pytest.raises(IndexUnreadable, match="not an http, https or file URL"):
        real_read_url("/opt/wheels")


def test_the_choice_says_where_its_variants_came_from(serve: Pages,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    pages = tuple(pytorch_like(serve))
    offline = release_builds("2.9.1", pages)  # the tests' reader: offline
    assert offline.source.startswith("nodeprov's table (index unreachable: ")
    assert offline.source.endswith("offline (tests read no index))")
    monkeypatch.setattr(index, "read_url", real_read_url)
    release_builds.cache_clear()
    online = release_builds("2.9.1", pages)
    assert online.source.startswith(f"the index {base(serve)}/whl/cu126")
    assert release_builds("2.9.1", pages) is online  # read once per run


def test_the_default_reader_is_the_one_the_tests_replace() -> None:
    # index_builds without a reader reads through index.read_url as it is when called, so the
    # conftest's offline reader covers it too (a default bound at import time bypassed it)
    with pytest.raises(IndexUnreadable, match=r"offline \(tests read no index\)"):
        index_builds("2.9.1", ["http://127.0.0.1:9/whl/cu129/torch/"])


@pytest.mark.parametrize("refusal", [(403, b""), (404, b""), (
    200, b"<html><body><h1>Access denied</h1><a href='/policy'>policy</a></body></html>")])
def test_pages_that_list_no_torch_wheel_at_all_are_no_index(
        refusal: tuple[int, bytes], serve: Pages, monkeypatch: pytest.MonkeyPatch) -> None:
    # a proxy that refuses download.pytorch.org (403 for every page, or its own page of
    # refusal) is an offline site: the table decides, saying so, instead of "lists no CUDA or
    # ROCm wheel of torch 2.9.1; check the version"
    pages = [f"{base(serve)}/whl/{variant}/torch/" for variant in RECORDED]
    for variant in RECORDED:
        serve[f"/whl/{variant}/torch/"] = refusal
    with pytest.raises(IndexUnreadable, match="no page lists a torch wheel"):
        index_builds("2.9.1", pages, real_read_url)
    monkeypatch.setattr(index, "read_url", real_read_url)
    release_builds.cache_clear()
    builds = release_builds("2.9.1", tuple(pages))
    assert builds.source.startswith("nodeprov's table (index unreachable: ")
    assert sorted(builds.cuda["x86_64"]) == ["cu126", "cu128", "cu129", "cu130"]
    # one page that lists torch wheels, none of the version: the index's word, not an outage
    serve["/whl/cu126/torch/"] = (200, recorded_page("cu126").encode())
    with pytest.raises(NoVariant, match=r"lists no CUDA or ROCm wheel of torch 2\.99\.0"):
        index_builds("2.99.0", pages, real_read_url)


def test_a_json_page_nested_past_pythons_limit_is_unreadable(serve: Pages) -> None:
    serve["/simple/torch/"] = (200, ('{"files":' + '{"a":' * 200_000 + "1" + "}" * 200_001)
                               .encode())
    with pytest.raises(IndexUnreadable, match="nested too deeply"):
        index_builds("2.9.1", [f"{base(serve)}/simple/torch/"], real_read_url)


def test_a_page_that_trickles_in_is_cut_off_at_the_deadline(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """urlopen's timeout bounds each read only: a byte every 0.2 s would never trip it."""
    import socket
    import time

    listener = socket.create_server(("127.0.0.1", 0))

    def trickle() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
            for _ in range(50):
                time.sleep(0.2)
                try:
                    connection.sendall(b"<")
                except OSError:
                    return

    threading.Thread(target=trickle, daemon=True).start()
    monkeypatch.setattr(index, "TIMEOUT_S", 1)
    started = time.monotonic()
    with listener, pytest.raises(IndexUnreadable, match="not read within 1 s"):
        real_read_url(f"http://127.0.0.1:{listener.getsockname()[1]}/torch/")
    assert time.monotonic() - started < 5
