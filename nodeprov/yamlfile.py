"""YAML loading that remembers line numbers, so errors can point at the line.

    >>> doc = load_yaml_text("all:\\n  vars:\\n    rdzv_port: 29500\\n", "inv.yaml")
    >>> doc["all"]["vars"].line_of("rdzv_port")
    3
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from nodeprov.errors import InputError

MAX_BYTES = 4 * 1024 * 1024  # an inventory or playbook this large is a mistake, not a cluster


class YamlMap(dict[str, Any]):
    """A mapping that knows the line of each key (1-based) and of itself."""

    line: int = 0
    key_lines: dict[str, int]

    def line_of(self, key: str) -> int:
        return self.key_lines.get(key, self.line)


class YamlList(list[Any]):
    """A list that knows the line of each item (1-based) and of itself."""

    line: int = 0
    item_lines: list[int]

    def line_of(self, index: int) -> int:
        return self.item_lines[index] if index < len(self.item_lines) else self.line


class _Loader(yaml.SafeLoader):
    """SafeLoader building YamlMap/YamlList and refusing duplicate keys."""

    source = ""


def _construct_map(loader: _Loader, node: yaml.MappingNode) -> YamlMap:
    loader.flatten_mapping(node)
    result = YamlMap()
    result.line = node.start_mark.line + 1
    result.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        if not isinstance(key, (str, int, float, bool)) or isinstance(key, bool):
            raise InputError(f"mapping key must be a string, got {key!r}", source=loader.source,
                             line=line)
        key = str(key)
        if key in result:
            raise InputError(f"duplicate key {key!r} (first at line {result.key_lines[key]}); "
                             "each key may appear once per mapping",
                             source=loader.source, line=line)
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[key] = line
    return result


def _construct_list(loader: _Loader, node: yaml.SequenceNode) -> YamlList:
    result = YamlList(loader.construct_object(child, deep=True) for child in node.value)
    result.line = node.start_mark.line + 1
    result.item_lines = [child.start_mark.line + 1 for child in node.value]
    return result


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_map)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_list)


def load_yaml_text(text: str, source: str) -> Any:
    """Parse YAML text; syntax errors become InputError with the line."""
    loader = _Loader(text)
    loader.source = source
    try:
        return loader.get_single_data()
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark else None
        raise InputError(f"YAML syntax error: {error.problem or error.context}; fix the YAML",
                         source=source, line=line) from None
    except yaml.YAMLError as error:
        raise InputError(f"YAML error: {error}", source=source) from None
    finally:
        loader.dispose()


def load_yaml_file(path: Path) -> Any:
    """Read and parse a YAML file, refusing what cannot be one (missing, huge, binary, empty)."""
    source = str(path)
    data = load_yaml_text(read_text(path), source)
    if data is None:
        raise InputError("file is empty; expected YAML content", source=source)
    return data


def read_text(path: Path, kind: str = "YAML") -> str:
    """A text file's content, refusing what cannot be one (missing, huge, binary, not UTF-8)."""
    source = str(path)
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise InputError(f"file is {size} bytes; expected a {kind} file under "
                             f"{MAX_BYTES // (1024 * 1024)} MiB", source=source)
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"file not found; give the path of an existing {kind} file",
                         source=source) from None
    except IsADirectoryError:
        raise InputError(f"is a directory; give the path of a {kind} file",
                         source=source) from None
    except PermissionError:
        raise InputError("permission denied; make the file readable", source=source) from None
    if b"\0" in raw:
        raise InputError(f"binary data (NUL bytes); expected a {kind} text file", source=source)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise InputError("not UTF-8 text; save the file as UTF-8", source=source,
                         line=line) from None
