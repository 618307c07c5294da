"""A site mirror as sites run one: HTTPS with a certificate from the site's own CA, installed in
each node's system store (and named by PIP_CERT on this machine), behind basic auth. uv, pip
and this machine's download of uv all verify it; a node without the CA fails with one line
that says so; the token appears nowhere."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from nodeprov.cli import app
from nodeprov.testbed.cluster import Testbed
from nodeprov.wheels import installer
from nodeprov.wheels.installer import Origin
from nodeprov.wheels.sources import Sources
from nodeprov.wheels.thismachine import ThisMachine, WheelSet
from nodeprov.wheels.wheelhouse import DownloadFailed
from tests.conftest import MakeTestbed
from tests.wheels.https_mirror import SiteCA, serving
from tests.wheels.mirror import UV_CACHE, simple_index, stand_in, uv_binary, uv_index

PLAYBOOK = """\
- name: torch from the site mirror
  hosts: all
  tasks:
    - {name: venv, venv: {path: /opt/site/venv, index_url: "{{ pip_index_url }}"}}
    - {name: torch, torch: {venv: /opt/site/venv, version: "2.13.0", cuda: cpu,
                            index_url: "{{ pip_index_url }}"}}
"""


def this_machine_trusts(ca: Path, monkeypatch: pytest.MonkeyPatch, cache: Path) -> None:
    """This machine's pip: the site's CA named by PIP_CERT, no pip.conf of this machine's
    (its file:// mirrors would serve instead), its own cache; requests' REQUESTS_CA_BUNDLE
    and CURL_CA_BUNDLE would override PIP_CERT, so they go."""
    for name in ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE", "PIP_FIND_LINKS"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PIP_CERT", str(ca))
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))


def test_this_machine_resolves_and_downloads_from_the_https_mirror_its_pip_trusts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # download_once's hashes and the wheelhouse: this machine's pip, over HTTPS with auth
    ca = SiteCA.make(tmp_path / "ca", "127.0.0.1")
    this_machine_trusts(ca.ca, monkeypatch, tmp_path / "cache")
    with serving(ca, "127.0.0.1", ["/opt/pypi"], auth=("ci", "tok-s3cret")) as mirror:
        wanted = WheelSet(("--python-version", "3.11"), ("six==1.17.0",),
                          Sources(index_url=mirror.url))
        (pin,) = ThisMachine().pins(wanted)
        assert pin.filename == "six-1.17.0-py2.py3-none-any.whl" and len(pin.sha256) == 64
        words = ThisMachine().fill(str(tmp_path / "house"), wanted)
        assert words == mirror.url.replace("tok-s3cret", "***")
        assert (tmp_path / "house" / pin.filename).is_file()
        assert "tok-s3cret" not in (tmp_path / "house" / ".fetch.log").read_text()
        monkeypatch.delenv("PIP_CERT")  # pip's default trust: the certificate is said
        with pytest.raises(DownloadFailed, match="certificate verify failed: unable to get local "
                           "issuer certificate; the index's certificate is not trusted here"):
            ThisMachine().pins(wanted)


def test_uv_trusts_the_system_store_and_pips_cert_together_as_pip_does(
        tmp_path: Path) -> None:
    # pip with a cert keeps the system store (and its own roots) and adds the cert; uv's --cert
    # replaces uv's roots. A public index (the system store's CA) and the site's (pip's cert)
    # must both serve uv; the venv has no pip, so nothing else could install.
    system, site = (SiteCA.make(tmp_path / name, "127.0.0.1") for name in ("system", "site"))
    store = tmp_path / "system-store.pem"  # the node's system store, as OpenSSL finds it
    store.write_text(system.ca.read_text())
    simple_index(tmp_path / "public", [stand_in("alpha", "1.0")])
    simple_index(tmp_path / "private", [stand_in("beta", "1.0")])
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    uv = uv_binary(tmp_path / "uv")
    with serving(system, "127.0.0.1", [str(tmp_path / "public")]) as public, \
            serving(site, "127.0.0.1", [str(tmp_path / "private")]) as private:
        step = installer.install(str(venv), ["alpha", "beta"],
                                 Origin(("--index-url", public.url, "--extra-index-url",
                                         private.url), cert=str(site.ca)))
        done = subprocess.run([str(uv) if arg == installer.UV else arg for arg in step.argv],
                              capture_output=True, text=True, check=False,
                              env={"PATH": os.environ["PATH"], "HOME": str(tmp_path),
                                   "SSL_CERT_FILE": str(store)})
    assert done.returncode == 0 and "trying pip" not in done.stderr, done.stderr
    assert len(list(venv.glob("lib/python3*/site-packages/*-1.0.dist-info"))) == 2
    assert not Path(f"{venv}{installer.UV_CERTS}").exists()  # removed after


def install_ca(cluster: Testbed, node: str, ca: Path) -> None:
    """As an admin does: the CA into the node's own /etc, then its system bundle rebuilt."""
    cluster.exec(node, "sh", "-c", "cat > /usr/local/share/ca-certificates/site-ca.crt",
                 input=ca.read_text(), check=True)
    cluster.exec(node, "update-ca-certificates", check=True)


@pytest.mark.integration
def test_uv_and_pip_install_from_an_https_mirror_of_the_sites_ca(
        make_testbed: MakeTestbed, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = make_testbed(nodes=3, shared=())  # the nodes see no mirror folder
    address = cluster.state.bridge_address.split("/")[0]  # this machine, on the nodes' link
    ca = SiteCA.make(tmp_path / "ca", address)
    for node in cluster.nodes:  # a site's nodes: no pip.conf of this machine's
        cluster.exec(node, "rm", "-rf", "/etc/pip.conf", "/etc/xdg/pip", check=True)
    for node in ("node1", "node2"):  # the admin installed the CA; node3 was forgotten
        install_ca(cluster, node, ca.ca)
    cluster.exec("node2", "mkdir", "-p", installer.UV_DIR, check=True)  # pip's path:
    cluster.exec("node2", "tee", installer.UV_FAILED, input="test: pip only\n", check=True)
    this_machine_trusts(ca.ca, monkeypatch, tmp_path / "cache")
    uv_index()  # uv's wheel, downloaded once for the tests
    token = f"tok-{secrets.token_hex(8)}"
    with serving(ca, address, ["/opt/pypi"],
                 ["/opt/wheels", str(UV_CACHE / f"uv-{installer.UV_VERSION}-index" / "files")],
                 auth=("ci", token)) as mirror:
        inventory = yaml.safe_load(cluster.inventory_path.read_text())
        inventory["all"]["vars"]["pip_index_url"] = mirror.url
        (tmp_path / "inventory.yaml").write_text(yaml.safe_dump(inventory))
        (tmp_path / "site.yaml").write_text(PLAYBOOK)
        report = tmp_path / "report.json"
        result = CliRunner().invoke(app, ["apply", str(tmp_path / "inventory.yaml"), "-p",
                                          str(tmp_path / "site.yaml"), "--json", str(report)],
                                    env={"COLUMNS": "1000"})
    out = " ".join(result.stdout.split())
    print(out)
    masked = mirror.url.replace(token, "***")
    assert result.exit_code == 1, out
    assert (f"node1 | torch | changed | install torch==2.13.0+cpu (~200 MB) with numpy from "
            f"{masked} with uv {installer.UV_VERSION} (torch not installed)") in out
    assert f"from {masked} with pip (uv failed: test: pip only;" in out
    assert "node1 | torch | warning" not in out  # uv installed there, through the site's CA
    assert (f"FAILED node3: torch: could not install torch==2.13.0+cpu and 1 more from {masked} "
            "(set pip_index_url or pip_find_links to an index it reaches, or wheelhouse: true; "
            "certificate not trusted: install the site's CA on the node, or set pip's cert)"
            ) in out
    for node in ("node1", "node2"):
        shown = cluster.exec(node, "/opt/site/venv/bin/python", "-W", "ignore", "-c",
                             "import torch; print(torch.__version__)")
        assert shown.stdout == "2.13.0+cpu\n", shown.stderr
    assert any(path.startswith("/files/torch-2.13.0") for path in mirror.requests)
    hosts = json.loads(report.read_text())["hosts"]
    assert hosts["node1"]["status"] != "failed" and hosts["node3"]["status"] == "failed"
    written = [report, *(path for path in (tmp_path / "cache").rglob("*") if path.is_file()
                         and path.suffix != ".whl")]
    assert token not in out + "".join(path.read_text(errors="replace") for path in written)
    for node in cluster.nodes:  # nor on the nodes: uv's record of a failure, pip's files
        found = cluster.exec(node, "grep", "-rl", token, "/var/cache/nodeprov", "/opt/site",
                             "/root")
        assert found.stdout == "", (node, found.stdout)

