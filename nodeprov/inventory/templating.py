"""Jinja in inventory values, templated as Ansible does: lazily (a value is rendered when it is
read, with the vars it names rendered in turn), with ``inventory_hostname``, ``group_names``,
``groups`` and ``hostvars``, in Jinja's immutable sandbox (no attribute tricks, no mutation).
An inline ``!vault`` value is decrypted when it is read, as Ansible does; an ``Unsafe`` one
(``!unsafe``) is never rendered.

    templar = HostTemplar(resolved)
    templar.value("node1", "key_path")   # "{{ inventory_dir }}/keys/id" -> ".../keys/id"
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from itertools import chain, islice
from pathlib import Path
from typing import Any

from jinja2 import Template, TemplateAssertionError, TemplateError, TemplateRuntimeError, Undefined
from jinja2.nativetypes import NativeCodeGenerator

from nodeprov.errors import EXIT_BAD_INPUT, NodeprovError
from nodeprov.inventory.resolve import Resolved
from nodeprov.inventory.source import is_host_list
from nodeprov.util.jinja import LimitedSandbox, RangeBudget, bounded
from nodeprov.util.tagged import Unsafe, Vaulted


def _concat(values: Iterator[Any]) -> Any:
    """One expression keeps its type (29500 stays an int); anything else joins into text
    (no literal_eval: "3.10" stays text)."""
    head = list(islice(values, 2))
    if len(head) == 1:
        return head[0]
    return "".join(str(value) for value in chain(head, values))


class TemplateLoop(NodeprovError, TemplateError):
    """A variable whose template needs itself."""

    exit_code = EXIT_BAD_INPUT


class PluginNotRun(NodeprovError, TemplateError):
    """A template calling one of Ansible's lookup plugins, which nodeprov does not run."""

    exit_code = EXIT_BAD_INPUT


def _refusing(call: str) -> Callable[..., Any]:
    """``lookup``/``query``/``q``: say which plugin the template asks for, and what to do."""
    def refuse(plugin: Any = "", *_terms: Any, **_options: Any) -> Any:
        raise PluginNotRun(f"{call}({plugin!r}, ...) runs Ansible's lookup plugin {plugin!r}, "
                           "which nodeprov does not run (it renders Jinja alone); write the "
                           "value itself, or give it with -e NAME=VALUE")
    return refuse


_LOOKUPS = {call: _refusing(call) for call in ("lookup", "query", "q")}


def _plugin_refusal(error: TemplateError) -> TemplateError:
    """Jinja's "No filter named 'x'" (at compile time, or at run time inside a branch) said as
    what it most likely is: one of Ansible's plugins."""
    found = re.match(r"No (filter|test) named '([^']+)'", error.message or "")
    if found is None:
        return error
    kind, name = found[1], found[2]
    return PluginNotRun(f"{kind} {name!r} is not one of Jinja's own {kind}s, the only ones "
                        f"nodeprov has: it does not run Ansible's {kind} plugins (nor a "
                        "collection's); write the value itself, or give it with -e NAME=VALUE")


class _Sandbox(LimitedSandbox):
    """The playbook's limited sandbox, keeping native types as Ansible's templar does."""

    code_generator_class = NativeCodeGenerator
    concat = staticmethod(_concat)  # type: ignore[assignment]


class HostTemplar:
    """Renders inventory values per host; each (host, var) rendered once."""

    def __init__(self, resolved: Resolved, playbook_dir: Path | None = None) -> None:
        self.resolved = resolved
        self._environment = _Sandbox()
        self._templates: dict[str, Template] = {}
        self._done: dict[tuple[str, str], Any] = {}
        self._rendering: set[tuple[str, str]] = set()
        self._sources: dict[str, dict[str, str]] = {}
        self._magic = {"playbook_dir": str((playbook_dir or Path.cwd()).resolve())}
        self._groups = {name: resolved.data.group_hosts(name) for name in resolved.data.groups}

    def value(self, host: str, var: str) -> Any:
        """``var`` of ``host`` rendered; TemplateError (with the chain of vars) on failure."""
        raw = self.resolved.hostvars[host][var]
        if isinstance(raw, Vaulted):
            origin = self.resolved.origins[host].get(var)
            return self.resolved.vault.value(raw, source=origin.source if origin else "",
                                             field=f"{host}: {var}")
        if isinstance(raw, (int, float, bool, Unsafe)) or raw is None or (
                isinstance(raw, str) and "{{" not in raw and "{%" not in raw):
            return raw  # most values: nothing to render, nothing to remember
        key = (host, var)
        if key not in self._done:
            if key in self._rendering:
                raise TemplateLoop(f"{var} refers to itself (through its template)")
            self._rendering.add(key)
            try:
                self._done[key] = self.render(host, raw)
            finally:
                self._rendering.discard(key)
        return self._done[key]

    def render(self, host: str, value: Any) -> Any:
        if isinstance(value, Unsafe):
            return value
        if isinstance(value, str) and ("{{" in value or "{%" in value):
            if value not in self._templates:
                try:
                    self._templates[value] = self._environment.from_string(value)
                except TemplateAssertionError as error:
                    raise _plugin_refusal(error) from None
            template = self._templates[value]
            # shared: Jinja reads the mapping as it is, so each var renders only when used
            context = template.new_context(_Vars(self, host),  # type: ignore[arg-type]
                                           shared=True)
            try:
                # bounded as the playbook's templates are: an inventory value renders at load
                result = _concat(bounded(template.root_render_func(context)))
            except TemplateRuntimeError as error:
                raise _plugin_refusal(error) from None
            if isinstance(result, Undefined):
                str(result)  # "{{ nope }}" alone comes back undefined, not raised: raise it
            return result
        if isinstance(value, Vaulted):  # inside a list or mapping
            return self.resolved.vault.value(value, source="", field=host)
        if isinstance(value, Mapping):
            return {key: self.render(host, item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.render(host, item) for item in value]
        return value

    def magic(self, host: str) -> dict[str, Any]:
        return {**self._magic, **self._source_of(host), "inventory_hostname": host,
                "inventory_hostname_short": host.split(".")[0],
                "group_names": self.resolved.group_names(host), "groups": self._groups,
                "hostvars": _HostVars(self), "range": RangeBudget(), **_LOOKUPS}


    def _source_of(self, host: str) -> dict[str, str]:
        """inventory_file and inventory_dir as Ansible sets them: the source that first named
        the host (a file of a folder, a script), each source's looked up once."""
        source = self.resolved.data.hosts[host].origin.source
        if source not in self._sources and is_host_list(Path(source)):
            # Ansible's: the list's text, and the text of a missing folder
            self._sources[source] = {"inventory_file": source, "inventory_dir": "None"}
        if source not in self._sources:
            path = Path(source).resolve()
            self._sources[source] = {"inventory_file": str(path), "inventory_dir": str(
                path if path.is_dir() else path.parent)}
        return self._sources[source]


class _Vars(Mapping[str, Any]):
    """One host's vars as a template sees them, each rendered only when read."""

    def __init__(self, templar: HostTemplar, host: str) -> None:
        self._templar, self._host = templar, host
        self._magic = templar.magic(host)

    def __getitem__(self, key: str) -> Any:
        if key in self._templar.resolved.hostvars[self._host]:
            return self._templar.value(self._host, key)
        return self._magic[key]

    def __contains__(self, key: object) -> bool:
        return key in self._magic or key in self._templar.resolved.hostvars[self._host]

    def __iter__(self) -> Iterator[str]:
        return iter({**self._magic, **self._templar.resolved.hostvars[self._host]})

    def __len__(self) -> int:
        return len(list(iter(self)))


class _HostVars(Mapping[str, Any]):
    """``hostvars``: every host's vars, rendered when read."""

    def __init__(self, templar: HostTemplar) -> None:
        self._templar = templar

    def __getitem__(self, host: str) -> _Vars:
        if host not in self._templar.resolved.hostvars:
            raise KeyError(host)
        return _Vars(self._templar, host)

    def __iter__(self) -> Iterator[str]:
        return iter(self._templar.resolved.hostvars)

    def __len__(self) -> int:
        return len(self._templar.resolved.hostvars)
