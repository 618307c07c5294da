"""``group_vars/`` and ``host_vars/`` beside the inventory (and the playbook), as Ansible's
``host_group_vars`` plugin finds them:

    group_vars/gpu            # first of: gpu, gpu.yml, gpu.yaml, gpu.json
    group_vars/gpu/*.yml      # or a directory: every file in it, sorted, subdirectories too

    found = VarsDir(Path("inventory"), Vault())     # a vault-encrypted file is decrypted
    found.load("group_vars", "gpu")   # [(vars, source), ...] in the order they merge
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from nodeprov.errors import InputError
from nodeprov.inventory.guard import check_size
from nodeprov.inventory.vaultlib import Vault
from nodeprov.util.yamlfile import YamlMap, kind_of, load_yaml_text, read_text

EXTENSIONS = (".yml", ".yaml", ".json")

Loaded = tuple[Mapping[str, Any], str]  # the vars of one file, and that file


class VarsDir:
    """The group_vars/ and host_vars/ of one folder; each directory listed once, each file read
    once (a 1,000-host inventory must not stat 4,000 paths)."""

    def __init__(self, folder: Path, vault: Vault) -> None:
        self.folder = folder
        self.vault = vault
        self._listed: dict[str, set[str]] = {}
        self._loaded: dict[tuple[str, str], list[Loaded]] = {}

    def load(self, kind: str, name: str) -> list[Loaded]:
        """The vars files of group or host ``name`` (``kind``: group_vars or host_vars)."""
        key = (kind, name)
        if key not in self._loaded:
            self._loaded[key] = [(data, str(path)) for path in self._files(kind, name)
                                 if (data := _load(path, self.vault))]
        return self._loaded[key]

    def _files(self, kind: str, name: str) -> list[Path]:
        if kind not in self._listed:
            folder = self.folder / kind
            self._listed[kind] = set(os.listdir(folder)) if folder.is_dir() else set()
        names = self._listed[kind]
        for candidate in (name, *(name + extension for extension in EXTENSIONS)):
            if candidate in names:
                path = self.folder / kind / candidate
                return _walk(path) if path.is_dir() else [path]
        return []


def _walk(folder: Path) -> list[Path]:
    """Files in ``folder`` as Ansible takes them: sorted, recursing into subdirectories without
    an extension, skipping hidden files, backups (``~``) and other extensions."""
    found: list[Path] = []
    for entry in sorted(os.listdir(folder)):
        if entry.startswith(".") or entry.endswith("~"):
            continue
        path = folder / entry
        extension = os.path.splitext(entry)[1]
        if path.is_dir() and not extension:
            found += _walk(path)
        elif path.is_file() and (not extension or extension in EXTENSIONS):
            found.append(path)
    return found


def _load(path: Path, vault: Vault) -> Mapping[str, Any] | None:
    source = str(path)
    text = vault.open_file(read_text(path), source)
    try:
        data = load_yaml_text(text, source, vault=True)
    except RecursionError:
        raise InputError("nested too deeply to read; flatten the file", source=source) from None
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise InputError(f"a vars file holds a mapping of name: value, not {kind_of(data)}",
                         source=source, line=1)
    check_size(data, source)
    return data if isinstance(data, YamlMap) else dict(data)
