"""The node's pip configuration: recorded pip.conf files (tests/data/pip-conf), pip's precedence,
and the probe part listing the files as pip would read them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from nodeprov.wheels import trust
from nodeprov.wheels.pipconfig import (
    SHELL,
    for_this_machine,
    local_files,
    node_pip,
    parse_env,
    this_machine,
)
from nodeprov.wheels.sources import Sources
from tests.wheels.https_mirror import SiteCA, serving
from tests.wheels.mirror import simple_index, stand_in

DATA = Path(__file__).parents[1] / "data" / "pip-conf"


def conf(name: str) -> str:
    return (DATA / name).read_text()


def test_an_index_in_the_global_section() -> None:
    found = node_pip({"/etc/pip.conf": conf("naming.conf")}, {})
    assert found.sources == Sources(index_url="https://download.zope.org/ppix")
    assert found.describe() == "the node's pip configuration (/etc/pip.conf)"
    assert found.sources.options("cpu") == ("--index-url", "https://download.zope.org/ppix")


def test_the_install_section_beats_the_global_one_and_values_split_on_lines() -> None:
    found = node_pip({"/etc/pip.conf": conf("repeatable.conf")}, {})
    assert found.sources.find_links == ("https://mirror1.example.com",
                                        "https://mirror2.example.com")
    assert found.sources.index_url is None and found.configured


def test_a_mirror_and_files_without_any_source() -> None:
    found = node_pip({"/etc/xdg/pip/pip.conf": None, "/etc/pip.conf": conf("booleans.conf"),
                      "/root/.config/pip/pip.conf": conf("nju-mirror.conf")}, {})
    assert found.sources.index_url == "https://mirrors.nju.edu.cn/pypi/web/simple"
    assert found.origins == ("/root/.config/pip/pip.conf",)
    assert not node_pip({"/etc/pip.conf": conf("booleans.conf")}, {}).configured
    assert not node_pip({}, {}).configured


def test_later_files_beat_earlier_ones_and_variables_beat_files() -> None:
    files = {"/etc/pip.conf": conf("naming.conf"), "/opt/venv/pip.conf": conf("nju-mirror.conf")}
    assert node_pip(files, {}).sources.index_url == "https://mirrors.nju.edu.cn/pypi/web/simple"
    found = node_pip(files, parse_env("pip-env index-url=http://10.0.0.1/simple\n"
                                      "pip-env find-links=/srv/a /srv/b\npip-env no-index=\n"))
    assert found.sources == Sources(index_url="http://10.0.0.1/simple",
                                    find_links=("/srv/a", "/srv/b"))
    assert found.origins == ("PIP_INDEX_URL", "PIP_FIND_LINKS")
    offline = node_pip({"/etc/pip.conf": "[global]\nno-index = true\nfind-links = /srv/w\n"}, {})
    assert offline.sources.options("cpu") == ("--no-index", "--find-links", "/srv/w")


def test_a_file_pip_cannot_read_is_named() -> None:
    # the mistake the NJU mirror's help page warns of: no [global] line
    with pytest.raises(ValueError, match="^/etc/pip.conf is not a pip configuration file pip "
                       "can read .File contains no section headers"):
        node_pip({"/etc/pip.conf": "index-url = https://mirrors.nju.edu.cn/pypi/web/simple\n"},
                 {})


def listed(tmp_path: Path, **env: str) -> list[str]:
    """What SHELL puts in "$@" and prints, for a venv at /v, with this environment."""
    script = "venv=/v; set --\n" + SHELL + '[ $# -eq 0 ] || printf "%s\\n" "$@"\n'
    clean = {key: value for key, value in os.environ.items() if not key.startswith(
        ("PIP_", "XDG_", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"))}
    return subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True,
                          env={**clean, "HOME": str(tmp_path), **env}).stdout.splitlines()


def test_the_probe_lists_the_files_in_pips_order(tmp_path: Path) -> None:
    home = str(tmp_path)
    assert listed(tmp_path, PIP_FIND_LINKS="/srv/w") == [
        "pip-env index-url=", "pip-env no-index=", "pip-env extra-index-url=",
        "pip-env find-links=/srv/w", "pip-env cert=", "pip-env ca-bundle=",
        "/etc/xdg/pip/pip.conf", "/etc/pip.conf",
        f"{home}/.pip/pip.conf", f"{home}/.config/pip/pip.conf", "/v/pip.conf"]
    (tmp_path / "env.conf").touch()  # an existing PIP_CONFIG_FILE: no user files
    assert listed(tmp_path, PIP_CONFIG_FILE=f"{home}/env.conf",
                  XDG_CONFIG_DIRS="/a:/b")[6:] == [
        "/a/pip/pip.conf", "/b/pip/pip.conf", "/etc/pip.conf", "/v/pip.conf",
        f"{home}/env.conf"]
    assert listed(tmp_path, PIP_CONFIG_FILE="/dev/null")[6:] == []


@pytest.mark.parametrize("env", [
    {}, {"XDG_CONFIG_DIRS": "/a:/b"}, {"XDG_CONFIG_HOME": "/cfg"}, {"PIP_CONFIG_FILE": "/nope"},
    {"PIP_CONFIG_FILE": "EXISTING"}, {"PIP_CONFIG_FILE": "/dev/null"},
])
def test_this_machines_files_are_the_ones_the_nodes_probe_lists(tmp_path: Path,
                                                                env: dict[str, str]) -> None:
    (tmp_path / "env.conf").touch()
    env = {key: str(tmp_path / "env.conf") if value == "EXISTING" else value
           for key, value in env.items()}
    assert local_files(env, "/v", str(tmp_path)) == listed(tmp_path, **env)[6:]


def test_this_machines_own_configuration_names_its_sources(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    conf = tmp_path / "pip.conf"
    conf.write_text("[global]\nindex-url = https://ci:s3cret@mirror.example/simple\n")
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    monkeypatch.setenv("PIP_FIND_LINKS", "/srv/wheels")
    here = this_machine()
    assert here.sources == Sources(index_url="https://ci:s3cret@mirror.example/simple",
                                   find_links=("/srv/wheels",))
    assert here.describe() == f"this machine's pip configuration ({conf}, PIP_FIND_LINKS)"
    options, words = for_this_machine(Sources(), ("--index-url", "https://pypi.org/simple"),
                                      here)
    assert options == () and words == here.describe()  # its own pip reads it
    conf.write_text("index-url = https://x\n")  # no [global]: pip says why itself
    assert not this_machine().sources.index_url


def test_the_ca_bundle_pip_verifies_with_from_its_files_and_variables() -> None:
    # pip's precedence: requests' REQUESTS_CA_BUNDLE or CURL_CA_BUNDLE, then PIP_CERT, then a
    # file's cert ([install] over [global]); a cert alone is no source
    files = {"/etc/pip.conf": "[global]\ncert = /etc/site/ca.pem\n"}
    assert node_pip(files, {}).cert == "/etc/site/ca.pem"
    assert not node_pip(files, {}).configured and node_pip(files, {}).origins == ()
    assert node_pip(files, parse_env("pip-env cert=/root/ca.pem\n")).cert == "/root/ca.pem"
    assert node_pip({}, parse_env("pip-env ca-bundle=/srv/ca.pem\n")).cert == "/srv/ca.pem"
    assert node_pip(files, parse_env("pip-env cert=/root/ca.pem\npip-env ca-bundle=/srv/ca.pem"
                                     "\n")).cert == "/srv/ca.pem"
    assert node_pip({}, {}).cert == ""


@pytest.mark.parametrize("site_in, other_in", [("REQUESTS_CA_BUNDLE", "PIP_CERT"),
                                               ("PIP_CERT", "REQUESTS_CA_BUNDLE"),
                                               ("CURL_CA_BUNDLE", "PIP_CERT"),
                                               ("PIP_CERT", "CURL_CA_BUNDLE"),
                                               ("PIP_CERT", "pip.conf"),
                                               ("pip.conf", "PIP_CERT"),
                                               ("REQUESTS_CA_BUNDLE", "pip.conf")])
def test_the_ca_bundle_read_is_the_one_real_pip_verifies_with(
        tmp_path: Path, site_in: str, other_in: str) -> None:
    # pip is the oracle: the mirror's CA named one way, another CA the other way; pip reaches
    # the mirror exactly when node_pip, from the probe's own output, picked the mirror's CA
    site, other = (SiteCA.make(tmp_path / name, "127.0.0.1") for name in ("site", "other"))
    simple_index(tmp_path / "mirror", [stand_in("alpha", "1.0")])
    conf = tmp_path / "pip.conf"
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "PIP_CONFIG_FILE": str(conf)}
    conf.write_text("[global]\n")
    for name, ca in ((other_in, other.ca), (site_in, site.ca)):
        if name == "pip.conf":
            conf.write_text(f"[global]\ncert = {ca}\n")
        else:
            env[name] = str(ca)
    probed = subprocess.run(["sh", "-c", f"venv={tmp_path}\n" + SHELL + 'printf "%s\\n" "$@"'],
                            capture_output=True, text=True, env=env, check=True).stdout
    files = {path: Path(path).read_text() if Path(path).is_file() else None
             for path in probed.splitlines() if not path.startswith("pip-env ")}
    chosen = node_pip(files, parse_env(probed)).cert
    with serving(site, "127.0.0.1", [str(tmp_path / "mirror")]) as mirror:
        pip = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps",
                              "--no-cache-dir", "--disable-pip-version-check", "--retries", "0",
                              "-d",
                              str(tmp_path / "got"), "--index-url", mirror.url, "alpha"],
                             capture_output=True, text=True, env=env, check=False)
    said = pip.stdout + pip.stderr
    assert pip.returncode == 0 or trust.untrusted(said), said  # reached, or refused the CA
    assert (pip.returncode == 0) == (chosen == str(site.ca)), said


def test_the_probe_prints_the_variables_naming_pips_ca_bundle() -> None:
    shown = subprocess.run(["sh", "-c", "venv=/v\n" + SHELL], capture_output=True, text=True,
                           env={"PATH": os.environ["PATH"], "PIP_CONFIG_FILE": os.devnull,
                                "PIP_CERT": "/a.pem", "CURL_CA_BUNDLE": "/b.pem"}, check=True)
    assert parse_env(shown.stdout) == {"cert": "/a.pem", "ca-bundle": "/b.pem"}
