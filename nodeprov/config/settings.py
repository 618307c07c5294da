"""The Ansible settings in force, each with where it came from, as ``ansible-config dump
--only-changed`` shows them: an environment variable beats the ansible.cfg, which beats the
default; the command line and inventory variables beat both (their owners apply that).

    settings = read_settings(os.environ, Path.cwd())
    settings.get("forks")          # 25, or None when neither ansible.cfg nor ANSIBLE_FORKS says
    settings.origin("forks")       # '/repo/ansible.cfg' or 'env: ANSIBLE_FORKS'
    settings.not_used              # ('[defaults] roles_path', 'ANSIBLE_NOCOLOR', ...)
    settings.might_matter()        # ('[paramiko_connection] look_for_keys', ...): say these
"""

from __future__ import annotations

import configparser
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nodeprov.config.convert import BadValue, convert
from nodeprov.config.definitions import CONFIG_ENV, DEFINITIONS, Definition, might_matter
from nodeprov.config.search import find_config_file
from nodeprov.errors import InputError

# a section name no file uses, so that [DEFAULT] reads as the section it is written as
_NO_DEFAULT_SECTION = "\0"


@dataclass(frozen=True)
class Setting:
    definition: Definition
    value: Any
    origin: str  # the ansible.cfg's path, or "env: ANSIBLE_X", as ansible-config says it
    entry: str  # "[defaults] forks" or "ANSIBLE_FORKS": where exactly

    def shown(self) -> str:
        return "(hidden)" if self.definition.secret else str(self.value)


@dataclass(frozen=True)
class Settings:
    config_file: Path | None = None
    values: Mapping[str, Setting] = field(default_factory=dict)
    not_used: tuple[str, ...] = ()  # ansible.cfg entries and ANSIBLE_* variables
    warnings: tuple[str, ...] = ()

    def get(self, name: str, default: Any = None) -> Any:
        """The value set by the environment or ansible.cfg, else ``default``."""
        setting = self.values.get(name)
        return default if setting is None else setting.value

    def might_matter(self) -> tuple[str, ...]:
        """The entries not used that a user could expect to change what nodeprov does."""
        return tuple(filter(might_matter, self.not_used))

    def origin(self, name: str) -> str:
        setting = self.values.get(name)
        return "" if setting is None else setting.origin

    def dump(self) -> list[str]:
        """The settings in force in ``ansible-config dump --only-changed``'s form: Ansible's
        base settings, then the ssh and sudo plugins' (a secret shows as ``(hidden)``)."""
        lines = [f"CONFIG_FILE() = {self.config_file}"] if self.config_file else []
        for plugin in ("", "ssh", "sudo"):
            found = sorted((s for s in self.values.values() if s.definition.plugin == plugin),
                           key=lambda s: s.definition.ansible)
            if found and plugin:
                lines += ["", f"{plugin}:", "_" * len(plugin)]
            lines += [f"{s.definition.ansible}({s.origin}) = {s.shown()}" for s in found]
        return lines


def read_settings(environ: Mapping[str, str], cwd: Path) -> Settings:
    """The settings from the ansible.cfg Ansible would read from ``cwd`` and the
    environment; InputError names the file and entry, or the variable, of a bad value."""
    config_file, warning = find_config_file(environ, cwd)
    parser = _parse(config_file) if config_file else None
    values: dict[str, Setting] = {}
    for definition in DEFINITIONS.values():
        setting = _resolve(definition, environ, config_file, parser, cwd)
        if setting is not None:
            values[definition.name] = setting
    return Settings(config_file, values, _not_used(config_file, environ),
                    (warning,) if warning else ())


def _parse(config_file: Path) -> configparser.ConfigParser:
    """The file parsed as Ansible parses it (Python's configparser, ``;`` also starting an
    inline comment, values raw: ``%%`` stays as written)."""
    parser = configparser.ConfigParser(inline_comment_prefixes=(";",))
    _read_into(parser, config_file)
    return parser


def _read_into(parser: configparser.ConfigParser, config_file: Path) -> None:
    source = str(config_file)
    if config_file.suffix not in (".cfg", ".ini"):
        raise InputError("an Ansible configuration file ends in .cfg or .ini (Ansible refuses "
                         "others); rename it or point ANSIBLE_CONFIG elsewhere", source=source)
    try:
        # bytes that are not UTF-8 are kept as Ansible keeps them (surrogates): a setting
        # nodeprov uses then fails its own check, naming the entry
        parser.read_string(config_file.read_bytes().decode(errors="surrogateescape"), source)
    except OSError as error:
        raise InputError(f"cannot read: {error.strerror}", source=source) from None
    except configparser.Error as error:
        line = getattr(error, "lineno", None)
        text = str(error).splitlines()[0].removeprefix("While reading from ")
        raise InputError(f"not an INI file Ansible reads: {text}", source=source,
                         line=line) from None


def _resolve(definition: Definition, environ: Mapping[str, str], config_file: Path | None,
             parser: configparser.ConfigParser | None, cwd: Path) -> Setting | None:
    found: Setting | None = None
    for name in definition.env:  # the last one set wins, as in Ansible
        if name in environ:
            found = Setting(definition, environ[name], f"env: {name}", name)
    if found is not None:
        try:
            value = convert(found.value, definition.kind, cwd, environ, from_ini=False)
        except BadValue as error:
            if found.value == "":  # an empty variable of a typed setting: the default
                return None
            raise InputError(f"{error}; {_expected(definition)}", source="environment",
                             field=found.entry) from None
        return Setting(definition, value, found.origin, found.entry)
    if parser is None or config_file is None:
        return None
    for section, key in definition.ini:  # the last one written wins
        text = parser.get(section, key, raw=True, fallback=None)
        if text is not None:
            found = Setting(definition, text, str(config_file), f"[{section}] {key}")
    if found is None:
        return None
    try:
        value = convert(found.value, definition.kind, config_file.parent, environ,
                        from_ini=True)
    except BadValue as error:
        raise InputError(f"{error}; {_expected(definition)}", source=str(config_file),
                         field=found.entry) from None
    return Setting(definition, value, found.origin, found.entry)


def _expected(definition: Definition) -> str:
    return {"bool": "expected true or false", "int": "expected a whole number"}.get(
        definition.kind or "", "expected text")


def _not_used(config_file: Path | None, environ: Mapping[str, str]) -> tuple[str, ...]:
    """Every entry of the file and ANSIBLE_* variable nodeprov does not read, in order."""
    read_keys = {entry for d in DEFINITIONS.values() for entry in d.ini}
    read_env = {name for d in DEFINITIONS.values() for name in d.env} | {CONFIG_ENV}
    listed: list[str] = []
    if config_file is not None:
        parser = configparser.ConfigParser(inline_comment_prefixes=(";",),
                                           default_section=_NO_DEFAULT_SECTION)
        _read_into(parser, config_file)
        for section in parser.sections():
            for key in parser.options(section):
                used = (any(key == k for _, k in read_keys) if section == "DEFAULT" else
                        (section, key) in read_keys)
                if not used:
                    listed.append(f"[{section}] {key}")
    listed += sorted(name for name in environ
                     if name.startswith("ANSIBLE_") and name not in read_env)
    return tuple(listed)
