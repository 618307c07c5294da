"""YAML loading that remembers line numbers, so errors can point at the line.

    >>> doc = load_yaml_text("all:\\n  vars:\\n    rdzv_port: 29500\\n", "inv.yaml")
    >>> doc["all"]["vars"].line_of("rdzv_port")
    3

A document is refused before it is built when it is too big, too deep or too expanded: aliases
repeat a node without copying it, so a small file can stand for billions of values (an "alias
bomb") that anything walking it, a template, ``str()``, would spell out. ``MAX_NODES`` counts
each node as often as the aliases repeat it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from nodeprov.errors import EXIT_BAD_INPUT, InputError, NodeprovError, StricterThanAnsible
from nodeprov.util.tagged import Vaulted, unsafe

MAX_BYTES = 4 * 1024 * 1024  # an inventory or playbook this large is a mistake, not a cluster
MAX_NODES = 1_000_000  # values of a document with every alias spelled out
MAX_DEPTH = 100  # nested collections


class YamlTooBig(NodeprovError, yaml.YAMLError):
    """A document over MAX_NODES, MAX_DEPTH or MAX_BYTES, or an alias to itself."""

    exit_code = EXIT_BAD_INPUT

    def __init__(self, message: str, mark: yaml.Mark | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = mark.line + 1 if mark else None


class YamlMap(dict[str, Any]):
    """A mapping that knows the line of each key (1-based) and of itself."""

    line: int = 0
    key_lines: dict[str, int]
    number_keys: frozenset[str] = frozenset()  # keys written as numbers (``10:``), now text

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
    own = sum(1 for key_node, _ in node.value if key_node.tag != _MERGE_TAG)
    loader.flatten_mapping(node)
    merged = len(node.value) - own  # flatten_mapping puts the merged pairs (<<:) first
    result = YamlMap()
    result.line = node.start_mark.line + 1
    result.key_lines = {}
    written: set[str] = set()  # keys written in this mapping: they override merged ones
    for index, (key_node, value_node) in enumerate(node.value):
        key = loader.construct_object(key_node, deep=True)
        line = key_node.start_mark.line + 1
        if not isinstance(key, (str, int, float, bool)) or isinstance(key, bool):
            raise InputError(f"mapping key must be a string, got {key!r}", source=loader.source,
                             line=line)
        if not isinstance(key, str):
            result.number_keys |= {str(key)}
        key = str(key)
        if index >= merged:
            if key in written:
                raise StricterThanAnsible(f"duplicate key {key!r} (first at line "
                                          f"{result.key_lines[key]})"
                                 "; each key may appear once per mapping",
                                 source=loader.source, line=line)
            written.add(key)
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[key] = line
    return result


def _construct_list(loader: _Loader, node: yaml.SequenceNode) -> YamlList:
    result = YamlList(loader.construct_object(child, deep=True) for child in node.value)
    result.line = node.start_mark.line + 1
    result.item_lines = [child.start_mark.line + 1 for child in node.value]
    return result


_MERGE_TAG = "tag:yaml.org,2002:merge"
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_map)
_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_list)


def _check_expansion(root: yaml.Node) -> None:
    """Refuse a node graph over MAX_NODES once aliases are spelled out, deeper than MAX_DEPTH,
    or holding an alias to itself (counted without walking the expansion: each node once)."""
    sizes: dict[int, int] = {}
    entered: set[int] = set()
    stack: list[tuple[yaml.Node, bool, int]] = [(root, False, 0)]
    while stack:
        node, children_done, depth = stack.pop()
        children = _children(node)
        if children_done:
            sizes[id(node)] = 1 + sum(sizes[id(child)] for child in children)
            if sizes[id(node)] > MAX_NODES:
                raise YamlTooBig(f"expands to more than {MAX_NODES} values (through aliases?); "
                                 "write the values out, or split the file", node.start_mark)
            continue
        if id(node) in sizes:
            continue
        if id(node) in entered:
            raise YamlTooBig("an alias refers to the collection it is in; remove the loop",
                             node.start_mark)
        if depth > MAX_DEPTH:
            raise YamlTooBig(f"nested more than {MAX_DEPTH} deep; flatten it", node.start_mark)
        entered.add(id(node))
        stack.append((node, True, depth))
        stack.extend((child, False, depth + 1) for child in children if id(child) not in sizes)


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return list(node.value) if isinstance(node, yaml.SequenceNode) else []


def _construct_vaulted(loader: _Loader, node: yaml.Node) -> Vaulted:
    if not isinstance(node, yaml.ScalarNode):
        raise InputError("a !vault value is the text ansible-vault encrypt_string prints",
                         source=loader.source, line=node.start_mark.line + 1)
    return Vaulted(str(node.value), node.start_mark.line + 1)


def _construct_unsafe(loader: _Loader, node: yaml.Node) -> Any:
    # the value the node would be without the tag (123 stays a number), its texts marked
    untagged = copy.copy(node)
    untagged.tag = loader.resolve(  # type: ignore[no-untyped-call]  # PyYAML is untyped here
        type(node), node.value, (True, False))
    return unsafe(loader.construct_object(untagged, deep=True))


class _VaultLoader(_Loader):
    """The loader of inventory files, where Ansible reads ``!vault`` and ``!unsafe``."""


_VaultLoader.add_constructor("!vault", _construct_vaulted)
_VaultLoader.add_constructor("!unsafe", _construct_unsafe)


def _load(text: str, source: str, loader_class: type[_Loader] = _Loader) -> Any:
    """Compose, check the size, depth and aliases, then build (raises yaml.YAMLError)."""
    if len(text) > MAX_BYTES:
        raise YamlTooBig(f"is {len(text)} characters; expected under {MAX_BYTES // 2**20} MiB")
    loader = loader_class(text)
    loader.source = source
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node)
        return loader.construct_document(node)
    except RecursionError:
        raise YamlTooBig("nested too deep; flatten it") from None
    finally:
        loader.dispose()


def load_limited(text: str) -> Any:
    """Plain ``yaml.safe_load`` with the size, depth and alias limits, for YAML read from a
    node (raises yaml.YAMLError).

        data = load_limited(cloud_cfg_text)
    """
    return _load(text, "")


def load_yaml_text(text: str, source: str, *, vault: bool = False) -> Any:
    """Parse YAML text; syntax errors become InputError with the line. ``vault``: ``!vault``
    values are read (as ``Vaulted``) and ``!unsafe`` ones (as ``Unsafe`` text), as in
    Ansible's inventories and vars files."""
    try:
        return _load(text, source, _VaultLoader if vault else _Loader)
    except YamlTooBig as error:
        raise StricterThanAnsible(error.message, source=source, line=error.line) from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark else None
        problem = error.problem or error.context
        if problem == "but found another document":
            raise InputError("a second YAML document (---) starts here; keep one per file",
                             source=source, line=line) from None
        raise InputError(f"YAML syntax error: {problem}; fix the YAML", source=source,
                         line=line) from None
    except yaml.YAMLError as error:
        raise InputError(f"YAML error: {error}", source=source) from None


def load_yaml_file(path: Path) -> Any:
    """Read and parse a YAML file, refusing what cannot be one (missing, huge, binary, empty)."""
    source = str(path)
    data = load_yaml_text(read_text(path), source)
    if data is None:
        raise InputError("file is empty; expected YAML content", source=source)
    return data


def kind_of(value: Any) -> str:
    """A parsed value's kind, for messages.

    >>> kind_of([1]), kind_of("x"), kind_of(None)
    ('a list', 'text', 'nothing')
    """
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    return "nothing" if value is None else "text"


def _a(word: str) -> str:
    return f"{'an' if word[:1].lower() in 'aeiou' else 'a'} {word}"


def read_bytes(path: Path, kind: str = "YAML") -> bytes:
    """A file's bytes, at most MAX_BYTES of them, refusing a missing, unreadable or huge file
    (``/dev/zero`` too) with one line naming it.

        password = read_bytes(Path(".vault"), "vault password").strip()
    """
    source = str(path)
    try:
        with path.open("rb") as stream:  # read, not stat: /dev/zero or a pipe has no st_size
            raw = stream.read(MAX_BYTES + 1)
        if len(raw) > MAX_BYTES:
            raise StricterThanAnsible(f"file is over {MAX_BYTES} bytes; expected {_a(kind)} "
                                      f"file under {MAX_BYTES // (1024 * 1024)} MiB",
                                      source=source)
    except FileNotFoundError:
        raise InputError(f"file not found; give the path of an existing {kind} file",
                         source=source) from None
    except IsADirectoryError:
        raise InputError(f"is a directory; give the path of {_a(kind)} file",
                         source=source) from None
    except PermissionError:
        raise InputError("permission denied; make the file readable", source=source) from None
    except OSError as error:  # a symlink loop (ELOOP), an I/O error
        raise InputError(f"cannot be read: {error.strerror}", source=source) from None
    return raw


def read_text(path: Path, kind: str = "YAML") -> str:
    """A text file's content, refusing what cannot be one (missing, huge, binary, not UTF-8)."""
    source = str(path)
    raw = read_bytes(path, kind)
    if b"\0" in raw:
        raise StricterThanAnsible(f"binary data (NUL bytes); expected {_a(kind)} text file",
                                  source=source)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise StricterThanAnsible("not UTF-8 text; save the file as UTF-8", source=source,
                                  line=line) from None
