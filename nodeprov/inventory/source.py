"""Reading an inventory source into ``InventoryData``, choosing the reader as Ansible does:
an executable script with a shebang runs with ``--list``; ``.yml``/``.yaml``/``.json`` (and files
without an extension that parse as a YAML mapping) are YAML; ``.toml`` is TOML (Ansible's toml
plugin: the YAML shape, children a list); anything else is INI. A directory
reads every inventory file in it and in its subfolders, in name order, but those Ansible
skips: hidden ones, its vars folders, names ending in ``inventory_ignore_extensions`` or
matching ``inventory_ignore_patterns`` (``ignored``); as Ansible, a file there that cannot be
read is skipped with a warning (a README, a hosts.yml.example), never one that is a vault no
given password opens. A vault-encrypted file is decrypted first (``vault``). A source that is
not a path but holds a comma is a host list, as Ansible's ``-i 'gpu01,gpu02:2222,'``.

    data = InventoryData()
    read_source(Path("inventory/hosts.ini"), data, warn=print, vault=Vault())
    read_source(Path("inventory"), data, print, Vault(), ignored_names([".ini"], ["^old"]))
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from nodeprov.errors import InputError, StricterThanAnsible
from nodeprov.inventory.data import InventoryData, Origin
from nodeprov.inventory.guard import check_size
from nodeprov.inventory.ini import parse_ini
from nodeprov.inventory.ranges import split_port
from nodeprov.inventory.vaultlib import Vault
from nodeprov.inventory.yamlsrc import parse_json_list, parse_yaml, script_group
from nodeprov.util.bounded import run_bounded
from nodeprov.util.yamlfile import MAX_BYTES, kind_of, load_yaml_text, read_text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the tomli backport on Python 3.10
    import tomli as tomllib

YAML_EXTENSIONS = (".yml", ".yaml", ".json")
# Ansible's INVENTORY_IGNORE_EXTS default, skipped when reading a directory
IGNORED_EXTENSIONS = (".pyc", ".pyo", ".swp", ".bak", "~", ".rpm", ".md", ".txt", ".rst",
                      ".orig", ".cfg", ".retry")
# Ansible's IGNORED_ALWAYS: hidden files and its vars folders (only the top folder's
# group_vars/host_vars apply: varsdirs reads them)
_ALWAYS_IGNORED = (r"^\.", "^host_vars$", "^group_vars$", "^vars_plugins$")
SCRIPT_TIMEOUT = 120.0


def ignored_names(extensions: Sequence[str] = IGNORED_EXTENSIONS,
                  patterns: Sequence[str] = ()) -> re.Pattern[str]:
    """The names an inventory folder's reading skips, one expression as Ansible builds it
    (searched anywhere in the name); ``patterns`` are regular expressions.

    >>> bool(ignored_names().search("hosts.orig")), bool(ignored_names().search("hosts"))
    (True, False)
    """
    return re.compile("|".join((*_ALWAYS_IGNORED, *patterns,
                                *(f"{re.escape(end)}$" for end in extensions))))


DEFAULT_IGNORED = ignored_names()


def is_host_list(path: Path) -> bool:
    """Ansible's test: no such path, and a comma in it.

    >>> is_host_list(Path("gpu01,gpu02")), is_host_list(Path("hosts.ini"))
    (True, False)
    """
    return "," in str(path) and not path.exists()


def read_host_list(text: str, data: InventoryData) -> None:
    """Each comma-separated name joins ``ungrouped`` (``name:port`` sets ansible_port) unless
    an earlier source has it, as Ansible's host_list plugin does: no ranges (a name with
    brackets stays as written) and no vars."""
    origin = Origin(text)
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, port = split_port(item)
        if "[" in name:
            name, port = item, None
        if name not in data.hosts:
            data.add_host(name, "ungrouped", origin, port)


def read_source(path: Path, data: InventoryData, warn: Callable[[str], None],
                vault: Vault, ignored: re.Pattern[str] = DEFAULT_IGNORED) -> None:
    if is_host_list(path):
        read_host_list(str(path), data)
    elif path.is_dir():
        _read_folder(path, data, warn, vault, set(), ignored)
    else:
        _read_file(path, data, warn, vault)


def _read_folder(path: Path, data: InventoryData, warn: Callable[[str], None], vault: Vault,
                 seen: set[tuple[int, int]], ignored: re.Pattern[str]) -> None:
    """Every member, subfolders too, each folder once (a symlink loop ends). A file that cannot
    be parsed is skipped with a warning, as in Ansible, which keeps what its lines before the
    error added; one nodeprov refuses on purpose (StricterThanAnsible) stops the run, as it
    would alone."""
    folder = path.stat()
    if (folder.st_dev, folder.st_ino) in seen:
        warn(f"{path}: skipped: this folder was read already (a symlink loop?)")
        return
    seen.add((folder.st_dev, folder.st_ino))
    for entry in sorted(os.listdir(path)):
        member = path / entry
        if ignored.search(entry):
            continue
        if member.is_dir():
            _read_folder(member, data, warn, vault, seen, ignored)
            continue
        try:
            _read_file(member, data, warn, vault)
        except StricterThanAnsible:
            raise
        except InputError as error:
            warn(f"{error}; skipped: Ansible skips a file of an inventory folder it cannot "
                 "parse (give it an ignored extension such as .md, .txt or .orig to silence "
                 "this)")


def _read_file(path: Path, data: InventoryData, warn: Callable[[str], None],
               vault: Vault) -> None:
    if _is_script(path):
        parse_json_list(_run_script(path), str(path), data)
        return
    source = str(path)
    text = vault.open_file(read_text(path, kind="inventory"), source)
    if path.suffix == ".toml":
        table = _toml(text, source)
        check_size(table, source)  # the one limit of every format
        parse_yaml(table, source, data, warn)
        return
    if path.suffix in YAML_EXTENSIONS:
        document = _yaml(text, source)
        if document is None:
            raise InputError("file is empty; expected an inventory", source=source)
        if not isinstance(document, Mapping):
            raise InputError("a YAML inventory is a mapping of group names (e.g. all:), not "
                             f"{kind_of(document)}", source=source, line=1)
    elif path.suffix:  # hosts.ini, hosts.cfg ...: Ansible tries YAML only without an extension
        parse_ini(text, source, data)
        return
    else:
        try:
            document = _yaml(text, source)
        except InputError:
            document = None  # not YAML: INI, as Ansible falls back
        if not isinstance(document, Mapping):
            parse_ini(text, source, data)
            return
    check_size(document, source)
    if _is_json_list(document):
        parse_json_list(document, source, data)
    else:
        parse_yaml(document, source, data, warn)


def _toml(text: str, source: str) -> dict[str, Any]:
    """A TOML inventory in the YAML form (its children are a list of group names)."""
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise InputError(f"TOML syntax error: {error}; fix the TOML", source=source) from None
    except RecursionError:  # tomllib reads nested arrays and tables recursively
        raise InputError("nested too deeply to read; flatten the file", source=source) from None
    if not document:
        raise InputError("file is empty; expected an inventory", source=source)
    for name, group in document.items():
        if not isinstance(group, dict):
            continue  # parse_yaml warns and skips it, as Ansible's toml plugin does
        for key, kind in (("children", list), ("hosts", dict), ("vars", dict)):
            if key in group and not isinstance(group[key], kind):
                raise InputError(f"{key} must be {kind_of(kind())} in a TOML inventory, not "
                                 f"{kind_of(group[key])}", source=source, field=f"{name}.{key}")
        if "children" in group:
            group["children"] = dict.fromkeys(map(str, group["children"]))
    return document


def _yaml(text: str, source: str) -> Any:
    try:
        return load_yaml_text(text, source, vault=True)
    except RecursionError:
        raise InputError("nested too deeply to read; flatten the file", source=source) from None


def _is_json_list(document: Mapping[str, Any]) -> bool:
    """``ansible-inventory --list`` output (and saved script output) has ``_meta``."""
    return "_meta" in document


def _is_script(path: Path) -> bool:
    if not (path.is_file() and os.access(path, os.X_OK)):
        return False
    with path.open("rb") as opened:
        return opened.read(2) == b"#!"


def _run_script(path: Path) -> Mapping[str, Any]:
    """A dynamic inventory script's ``--list`` (and ``--host`` per host without ``_meta``)."""
    document = _script_json(path, ["--list"])
    meta = document.get("_meta")
    if not isinstance(meta, Mapping) or "hostvars" not in meta:
        groups = (script_group(name, group) for name, group in document.items() if name != "_meta")
        hosts = {str(host) for group in groups if isinstance(group.get("hosts"), list)
                 for host in group["hosts"]}
        document = {**document, "_meta": {"hostvars": {
            host: _script_json(path, ["--host", host]) for host in sorted(hosts)}}}
    return document


def _script_json(path: Path, args: list[str]) -> Mapping[str, Any]:
    """What the script prints, read as a file is: at most MAX_BYTES (a script printing without
    end filled the memory), within SCRIPT_TIMEOUT."""
    source = f"{path} {' '.join(args)}"
    try:
        done = run_bounded([str(path.resolve()), *args], limit=MAX_BYTES,
                           timeout=SCRIPT_TIMEOUT)
    except OSError as error:
        raise InputError(f"inventory script failed to run: {error.strerror or error}",
                         source=source) from None
    if done.over_limit:
        raise StricterThanAnsible(f"inventory script printed over {MAX_BYTES} bytes; an "
                                  f"inventory must be under {MAX_BYTES // (1024 * 1024)} MiB",
                                  source=source)
    if done.timed_out:
        raise InputError(f"inventory script still ran after {SCRIPT_TIMEOUT:g} s; make it "
                         "answer faster", source=source)
    if done.returncode != 0:
        said = done.stderr_tail.decode(errors="replace")
        tail = " ".join(said.strip().splitlines()[-2:])[-300:]
        raise InputError(f"inventory script exited {done.returncode}: {tail}", source=source)
    try:
        document = json.loads(done.stdout or b"{}")
    except (ValueError, RecursionError) as error:
        raise InputError(f"inventory script printed no valid JSON ({error})",
                         source=source) from None
    if not isinstance(document, Mapping):
        raise InputError("inventory script must print a JSON object", source=source)
    check_size(document, source)
    return document
