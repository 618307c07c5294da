"""A site mirror as sites run one: a PEP 503 index over HTTPS, its certificate from the site's
own CA (made here with openssl), optionally behind basic auth.

    ca = SiteCA.make(tmp_path / "ca", "10.77.3.1")      # ca.pem: what the admin installs
    with serving(ca, "10.77.3.1", ["/opt/pypi"], ["/opt/wheels"], auth=("ci", "s3cret")) as url:
        ...   # url: https://ci:s3cret@10.77.3.1:PORT/simple

The index merges the projects' pages of folder mirrors (``/opt/pypi``: ``simple/`` and
``files/``, as ``tests/wheels/mirror.simple_index`` writes them) and the wheels of flat folders
(``/opt/wheels``), each link with its sha256 as PyPI gives it. Nothing is copied: files are
served from where they lie.
"""

from __future__ import annotations

import base64
import functools
import re
import ssl
import subprocess
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

from tests.wheels.mirror import file_link, project_of, project_page

_LINK = re.compile(r'<a href="\.\./\.\./files/[^"]+">[^<]*</a>')  # a link of file_link's


@dataclass(frozen=True)
class SiteCA:
    """A CA and a server certificate it signed for one IP address."""

    ca: Path
    cert: Path
    key: Path

    @classmethod
    def make(cls, folder: Path, address: str) -> SiteCA:
        folder.mkdir(parents=True, exist_ok=True)
        ca, ca_key = folder / "ca.pem", folder / "ca.key"
        cert, key, csr, ext = (folder / name for name in ("server.pem", "server.key",
                                                           "server.csr", "ext.cnf"))
        ext.write_text(f"subjectAltName=IP:{address}\nbasicConstraints=CA:FALSE\n"
                       "keyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n")
        new_key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        for argv in (
                ["req", "-x509", *new_key, "-days", "2", "-subj",
                 f"/CN=nodeprov test site CA {folder.name}",
                 "-keyout", ca_key, "-out", ca, "-addext", "basicConstraints=critical,CA:TRUE",
                 "-addext", "keyUsage=critical,keyCertSign,cRLSign"],
                ["req", *new_key, "-subj", "/CN=mirror", "-keyout", key, "-out", csr],
                ["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial",
                 "-days", "2", "-extfile", ext, "-out", cert]):
            subprocess.run(["openssl", *map(str, argv)], check=True, capture_output=True)
        return cls(ca, cert, key)


class _Index:
    def __init__(self, mirrors: Sequence[str], flat: Sequence[str]) -> None:
        self.mirrors = [Path(folder) for folder in mirrors]
        self.flat = {path.name: path for folder in flat for path in Path(folder).glob("*.whl")}
        self.requests: list[str] = []

    @functools.cache  # noqa: B019 (one index per test, dropped with it)
    def page(self, project: str) -> str | None:
        links = []
        for mirror in self.mirrors:
            page = mirror / "simple" / project / "index.html"
            if page.is_file():
                links += _LINK.findall(page.read_text())
        links += [file_link(name, path.read_bytes()) for name, path in sorted(self.flat.items())
                  if project_of(name) == project]
        return project_page(links) if links else None

    def file(self, name: str) -> Path | None:
        if "/" in name or name.startswith("."):
            return None
        found = [mirror / "files" / name for mirror in self.mirrors]
        return next((path for path in [*found, self.flat.get(name)] if path and path.is_file()),
                    None)


def _handler(index: _Index, auth: str | None) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            index.requests.append(self.path)

        def do_GET(self) -> None:  # noqa: N802 (http.server's names)
            self.respond(body=True)

        def do_HEAD(self) -> None:  # noqa: N802 (uv asks for a wheel's size first)
            self.respond(body=False)

        def respond(self, body: bool) -> None:
            if auth and self.headers.get("Authorization") != auth:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="mirror"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            parts = [unquote(part) for part in self.path.split("?")[0].split("/") if part]
            page = index.page(parts[1]) if len(parts) == 2 and parts[0] == "simple" else None
            path = index.file(parts[1]) if len(parts) == 2 and parts[0] == "files" else None
            if page is None and path is None:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/html" if page else "application/octet-stream")
            self.send_header("Content-Length", str(len(page.encode()) if page else
                                                   path.stat().st_size if path else 0))
            self.end_headers()
            if body and page:
                self.wfile.write(page.encode())
            elif body and path:
                with path.open("rb") as stream:
                    while chunk := stream.read(1 << 20):
                        self.wfile.write(chunk)

    return Handler


@dataclass(frozen=True)
class Mirror:
    url: str  # with the credentials, as the inventory names it
    requests: list[str]  # the paths asked for, in order


@contextmanager
def serving(ca: SiteCA, address: str, mirrors: Sequence[str], flat: Sequence[str] = (),
            auth: tuple[str, str] | None = None) -> Iterator[Mirror]:
    """The mirror on ``address`` (a port of its own), until the block ends."""
    index = _Index(mirrors, flat)
    header = None if auth is None else \
        "Basic " + base64.b64encode(":".join(auth).encode()).decode()
    server = ThreadingHTTPServer((address, 0), _handler(index, header))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(ca.cert, ca.key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    user = "" if auth is None else f"{auth[0]}:{auth[1]}@"
    try:
        yield Mirror(f"https://{user}{address}:{server.server_address[1]}/simple",
                     index.requests)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
