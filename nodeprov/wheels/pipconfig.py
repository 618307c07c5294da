"""A pip configuration, the node's or this machine's: where pip installs from when the
inventory sets no ``pip_*`` variable.

    >>> conf = node_pip({"/etc/pip.conf": "[global]\\nindex-url = http://10.0.0.1/simple\\n"}, {})
    >>> conf.sources.options("cpu"), conf.describe()
    (('--index-url', 'http://10.0.0.1/simple'), "the node's pip configuration (/etc/pip.conf)")
    >>> here = node_pip({"/etc/pip.conf": "[global]\\nfind-links = /srv/w\\n"}, {},
    ...                 "this machine's")
    >>> for_this_machine(Sources(), ("--index-url", "https://pypi.org/simple"), here)
    ((), "this machine's pip configuration (/etc/pip.conf)")

pip reads its files in this order, a later value winning (pip's ``configuration.py``): the
site-wide files (``$XDG_CONFIG_DIRS``/pip/pip.conf, /etc/pip.conf), the user's (~/.pip/pip.conf,
~/.config/pip/pip.conf, skipped when ``PIP_CONFIG_FILE`` names an existing file), the venv's
pip.conf, then ``PIP_CONFIG_FILE``; ``PIP_CONFIG_FILE=/dev/null`` reads none. A key of the
``[install]`` section beats the same key of ``[global]``, and ``PIP_*`` variables beat both.
``SHELL`` (a probe's part) lists the files into ``"$@"`` and prints the variables as the
install will see them (the same SSH session and sudo); ``local_files`` lists this machine's.

``cert`` is the CA bundle pip verifies HTTPS with, besides its system store and own roots:
requests' ``REQUESTS_CA_BUNDLE`` or ``CURL_CA_BUNDLE`` where set (requests lets them win over
the session's ``verify``, which pip sets from ``--cert``), else ``PIP_CERT``, else a file's
``cert``. uv is given the same (``installer``), so both trust a site's own CA alike.

What this machine downloads for the nodes (uv, the wheelhouse, download_once's hashes) comes from
the inventory's sources, else from this machine's own pip configuration, else from the defaults
(``for_this_machine``): never from an index the inventory did not name. As on the nodes, pip's
own configuration still adds its extra indexes and find-links to the options given.
"""

from __future__ import annotations

import configparser
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from nodeprov.util.redact import mask_urls
from nodeprov.wheels.sources import Sources

ENV_PREFIX = "pip-env "
# Needs $venv; appends the pip files to "$@" for nodeprov_read, in pip's override order.
SHELL = r"""printf 'pip-env %s\n' "index-url=${PIP_INDEX_URL-}" "no-index=${PIP_NO_INDEX-}" \
  "extra-index-url=${PIP_EXTRA_INDEX_URL-}" "find-links=${PIP_FIND_LINKS-}" \
  "cert=${PIP_CERT-}" "ca-bundle=${REQUESTS_CA_BUNDLE:-${CURL_CA_BUNDLE-}}"
if [ "${PIP_CONFIG_FILE-}" != /dev/null ]; then
  ifs=$IFS; IFS=:
  for dir in ${XDG_CONFIG_DIRS:-/etc/xdg}; do set -- "$@" "$dir/pip/pip.conf"; done
  IFS=$ifs
  set -- "$@" /etc/pip.conf
  { [ -n "${PIP_CONFIG_FILE-}" ] && [ -e "$PIP_CONFIG_FILE" ]; } || set -- "$@" \
    "${HOME-}/.pip/pip.conf" "${XDG_CONFIG_HOME:-${HOME-}/.config}/pip/pip.conf"
  set -- "$@" "$venv/pip.conf"
  [ -z "${PIP_CONFIG_FILE-}" ] || set -- "$@" "$PIP_CONFIG_FILE"
fi
"""
_KEYS = ("index-url", "extra-index-url", "find-links", "no-index", "cert")
_TRUE = ("1", "true", "yes", "on", "y", "t")


@dataclass(frozen=True)
class NodePip:
    """The sources the node's pip configuration gives, and where each came from."""

    sources: Sources
    origins: tuple[str, ...]
    whose: str = "the node's"
    cert: str = ""  # the CA bundle pip verifies HTTPS with ("": its default trust)

    @property
    def configured(self) -> bool:
        return self.sources.custom

    def describe(self) -> str:
        return f"{self.whose} pip configuration ({', '.join(self.origins)})"


def parse_env(lines: str) -> dict[str, str]:
    """The ``PIP_*`` values ``SHELL`` printed, by pip key, empty ones left out.

    >>> parse_env("pip-env index-url=http://m/simple\\npip-env no-index=\\nother")
    {'index-url': 'http://m/simple'}
    """
    values = {}
    for line in lines.splitlines():
        key, sep, value = line.removeprefix(ENV_PREFIX).partition("=")
        if line.startswith(ENV_PREFIX) and sep and value.strip():
            values[key] = value.strip()
    return values


def node_pip(files: Mapping[str, str | None], env: Mapping[str, str],
             whose: str = "the node's") -> NodePip:
    """What pip on the node uses from ``files`` (path -> text, None when absent, in pip's
    order) and ``env`` (``parse_env``). A file pip could not parse raises ValueError."""
    found: dict[tuple[str, str], tuple[str, str]] = {}  # (section, key) -> (value, origin)
    for path, text in files.items():
        if not text:
            continue
        parser = configparser.RawConfigParser(strict=False)
        try:
            parser.read_string(text, source=path)
        except configparser.Error as error:
            first_line = str(error).splitlines()[0]
            raise ValueError(f"{path} is not a pip configuration file pip can read "
                             f"({first_line})") from None
        for section in ("global", "install"):
            if parser.has_section(section):
                for key, text_value in parser.items(section):
                    name = key.lower().replace("_", "-").removeprefix("--")
                    if name in _KEYS:
                        found[(section, name)] = (text_value, path)
    chosen: dict[str, tuple[str, str]] = {}
    for key in _KEYS:
        if key in env:
            chosen[key] = (env[key], f"PIP_{key.upper().replace('-', '_')}")
        elif ("install", key) in found or ("global", key) in found:
            chosen[key] = found.get(("install", key)) or found[("global", key)]
    value = {key: text for key, (text, _) in chosen.items()}
    sources = Sources(index_url=value.get("index-url"),
                      extra_index_urls=tuple(value.get("extra-index-url", "").split()),
                      find_links=tuple(value.get("find-links", "").split()),
                      no_index=value.get("no-index", "").lower() in _TRUE)
    origins = dict.fromkeys(origin for key, (_, origin) in chosen.items() if key != "cert")
    cert = env.get("ca-bundle") or value.get("cert", "")  # requests' variables win
    return NodePip(sources, tuple(origins), whose, cert.strip())


def local_files(environ: Mapping[str, str], prefix: str, home: str) -> list[str]:
    """The files pip reads on this machine, in its order: what ``SHELL`` lists on a node.

    >>> local_files({"XDG_CONFIG_DIRS": "/a:/b"}, "/v", "/root")[:3]
    ['/a/pip/pip.conf', '/b/pip/pip.conf', '/etc/pip.conf']
    """
    config_file = environ.get("PIP_CONFIG_FILE", "")
    if config_file == os.devnull:
        return []
    files = [f"{folder}/pip/pip.conf" for folder in
             (environ.get("XDG_CONFIG_DIRS") or "/etc/xdg").split(":") if folder]
    files.append("/etc/pip.conf")
    if not (config_file and os.path.exists(config_file)):
        user = environ.get("XDG_CONFIG_HOME") or f"{home}/.config"
        files += [f"{home}/.pip/pip.conf", f"{user}/pip/pip.conf"]
    files.append(f"{prefix}/pip.conf")
    return [*files, config_file] if config_file else files


def this_machine() -> NodePip:
    """This machine's pip configuration, as the pip nodeprov runs (``sys.executable -m pip``)
    reads it; a file it cannot parse counts as none (pip itself then says why)."""
    files: dict[str, str | None] = {}
    for path in local_files(os.environ, sys.prefix, str(Path.home())):
        try:
            files[path] = Path(path).read_text(errors="replace")
        except OSError:
            files[path] = None
    env = {key: value.strip() for key in _KEYS
           if (value := os.environ.get(f"PIP_{key.upper().replace('-', '_')}", "")).strip()}
    try:
        return node_pip(files, env, "this machine's")
    except ValueError:
        return NodePip(Sources(), (), "this machine's")


def for_this_machine(sources: Sources, default: tuple[str, ...], here: NodePip, variant: str = ""
                     ) -> tuple[tuple[str, ...], str]:
    """The source options for a download this machine makes for the nodes, and words naming
    them: the inventory's ``sources``, else none (``here``, this machine's pip configuration,
    applies), else ``default``."""
    if sources.custom:
        return sources.options(variant), sources.describe(variant)
    if here.configured:
        return (), here.describe()
    urls = [word for word in default if not word.startswith("-")]
    return default, mask_urls(", ".join(urls)) or "pip's default index (https://pypi.org/simple)"
