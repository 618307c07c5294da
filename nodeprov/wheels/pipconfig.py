"""The node's own pip configuration: where its pip installs from when the inventory sets no
``pip_*`` variable.

    >>> conf = node_pip({"/etc/pip.conf": "[global]\\nindex-url = http://10.0.0.1/simple\\n"}, {})
    >>> conf.sources.options("cpu"), conf.describe()
    (('--index-url', 'http://10.0.0.1/simple'), "the node's pip configuration (/etc/pip.conf)")

pip reads its files in this order, a later value winning (pip's ``configuration.py``): the
site-wide files (``$XDG_CONFIG_DIRS``/pip/pip.conf, /etc/pip.conf), the user's (~/.pip/pip.conf,
~/.config/pip/pip.conf, skipped when ``PIP_CONFIG_FILE`` names an existing file), the venv's
pip.conf, then ``PIP_CONFIG_FILE``; ``PIP_CONFIG_FILE=/dev/null`` reads none. A key of the
``[install]`` section beats the same key of ``[global]``, and ``PIP_*`` variables beat both.
``SHELL`` (a probe's part) lists the files into ``"$@"`` and prints the variables as the
install will see them (the same SSH session and sudo).
"""

from __future__ import annotations

import configparser
from collections.abc import Mapping
from dataclasses import dataclass

from nodeprov.wheels.wheelhouse import Sources

ENV_PREFIX = "pip-env "
# Needs $venv; appends the pip files to "$@" for nodeprov_read, in pip's override order.
SHELL = r"""printf 'pip-env %s\n' "index-url=${PIP_INDEX_URL-}" "no-index=${PIP_NO_INDEX-}" \
  "extra-index-url=${PIP_EXTRA_INDEX_URL-}" "find-links=${PIP_FIND_LINKS-}"
if [ "${PIP_CONFIG_FILE-}" != /dev/null ]; then
  ifs=$IFS; IFS=:
  for dir in ${XDG_CONFIG_DIRS:-/etc/xdg}; do set -- "$@" "$dir/pip/pip.conf"; done
  IFS=$ifs
  set -- "$@" /etc/pip.conf
  [ -n "${PIP_CONFIG_FILE-}" ] && [ -e "$PIP_CONFIG_FILE" ] || set -- "$@" \
    "${HOME-}/.pip/pip.conf" "${XDG_CONFIG_HOME:-${HOME-}/.config}/pip/pip.conf"
  set -- "$@" "$venv/pip.conf"
  [ -z "${PIP_CONFIG_FILE-}" ] || set -- "$@" "$PIP_CONFIG_FILE"
fi
"""
_KEYS = ("index-url", "extra-index-url", "find-links", "no-index")
_TRUE = ("1", "true", "yes", "on", "y", "t")


@dataclass(frozen=True)
class NodePip:
    """The sources the node's pip configuration gives, and where each came from."""

    sources: Sources
    origins: tuple[str, ...]

    @property
    def configured(self) -> bool:
        return self.sources.custom

    def describe(self) -> str:
        return f"the node's pip configuration ({', '.join(self.origins)})"


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


def node_pip(files: Mapping[str, str | None], env: Mapping[str, str]) -> NodePip:
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
    origins = dict.fromkeys(origin for _, origin in chosen.values())
    return NodePip(sources, tuple(origins))
