"""Playbooks: Ansible-like plays of tasks, checked against the inventory before any connection.

    - name: Cluster network
      hosts: all
      tasks:
        - name: Firewall for NCCL
          firewall: {subnet: "{{ node_subnet }}", rdzv_port: "{{ rdzv_port }}"}
          tags: [firewall]

Parameters are Jinja2 templates rendered per host with its vars, ``inventory_hostname``,
``group_names`` and ``facts`` (the node's facts, known only once connected).

Beside the loader: ``serial`` (a play's batches, ``serial:`` and ``max_fail_percentage:``),
``tags`` (what --tags and --skip-tags select), ``listing`` (--list-hosts, --list-tasks).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from nodeprov.errors import InputError
from nodeprov.inventory import Host, Inventory
from nodeprov.playbook import serial
from nodeprov.remote.facts import Facts
from nodeprov.tasks.base import ParamError, TaskType, param_names, parse_params
from nodeprov.tasks.registry import REGISTRY
from nodeprov.util import validate
from nodeprov.util.jinja import TemplateError, Templates, hide
from nodeprov.util.yamlfile import YamlList, YamlMap, load_yaml_file


def default_playbook() -> Path:
    """The playbook nodeprov ships (``apply`` without ``-p``)."""
    return Path(str(resources.files("nodeprov").joinpath("playbooks", "site.yaml")))

PLAY_KEYS = ("name", "hosts", "vars", "tasks", "job", "tags", "serial", "max_fail_percentage")
TASK_KEYS = ("name", "tags")
BUILTIN_NAMES = frozenset({"facts", "inventory_hostname", "group_names", "groups"})


@dataclass(frozen=True)
class TaskSpec:
    """One task of a play as written: its type, raw (template) parameters and where it is."""

    name: str
    type: TaskType[Any]
    raw_params: Mapping[str, Any]
    tags: tuple[str, ...]
    play_vars: Mapping[str, Any]
    source: str
    line: int
    param_lines: Mapping[str, int]
    templates: Templates = field(compare=False, repr=False)

    def variables(self, host: Host, groups: Mapping[str, Sequence[str]],
                  facts: Facts | None) -> dict[str, Any]:
        variables = dict(host.vars)
        variables.update(self.play_vars)
        variables.update(inventory_hostname=host.name, group_names=list(host.groups),
                         groups={name: list(members) for name, members in groups.items()})
        if facts is not None:
            variables["facts"] = dataclasses.asdict(facts)
        return variables

    @property
    def needs_facts(self) -> bool:
        return "facts" in self.templates.referenced_names(dict(self.raw_params))

    def params_for(self, host: Host, groups: Mapping[str, Sequence[str]],
                   facts: Facts | None) -> Any:
        """Render and parse this task's parameters for ``host``; InputError names the line."""
        variables = self.variables(host, groups, facts)
        rendered: dict[str, Any] = {}
        for key, value in self.raw_params.items():
            try:
                rendered[key] = self.templates.render(value, variables)
            except (TemplateError, TypeError, ValueError, ArithmeticError) as error:
                # a filter given the wrong type raises plain Python errors while rendering
                raise self.error(hide(f"template error for {host.name}: {error}",
                                      host.become_password), key) from None
        try:
            return parse_params(self.type.params, rendered)
        except ParamError as error:
            raise self.error(hide(f"{error} (host {host.name})", host.become_password),
                             error.field) from None

    def error(self, message: str, param: str = "") -> InputError:
        line = self.param_lines.get(param, self.line)
        field = f"task {self.name!r}" + (f" {self.type.name}.{param}" if param else "")
        return InputError(message, source=self.source, line=line, field=field)


@dataclass(frozen=True)
class JobParams:
    """The ``job:`` of a play (site.yaml fills each from the inventory's job_* vars)."""

    venv_path: str = "/opt/nodeprov/venv"
    rdzv_port: int = 29500
    backend: Literal["auto", "nccl", "gloo"] = "auto"
    timeout: int = 120
    max_bytes: int = 64 * 1024 * 1024
    bandwidth_drop: float = 0.3

    def __post_init__(self) -> None:
        validate.absolute_path(self.venv_path)
        validate.port(self.rdzv_port)
        if self.timeout < 10:
            raise ValueError(f"timeout {self.timeout} is too short; give at least 10 seconds")
        if not 8 <= self.max_bytes <= 1 << 34:
            raise ValueError(f"max_bytes {self.max_bytes} must be from 8 to 16 GiB")
        if not 0 < self.bandwidth_drop < 1:
            raise ValueError(f"bandwidth_drop {self.bandwidth_drop} must be between 0 and 1")


@dataclass(frozen=True)
class JobSpec:
    """A play's ``job:``: the verification job across all the play's hosts, rendered once with
    the first host's vars (the job is one cluster-wide run)."""

    raw_params: Mapping[str, Any]
    play_vars: Mapping[str, Any]
    tags: tuple[str, ...]
    source: str
    line: int
    templates: Templates = field(compare=False, repr=False)

    def params_for(self, host: Host) -> JobParams:
        variables = {**host.vars, **self.play_vars, "inventory_hostname": host.name}
        where = f"play job ({host.name})"
        try:
            rendered = self.templates.render(dict(self.raw_params), variables)
            return parse_params(JobParams, rendered)
        except (TemplateError, TypeError, ArithmeticError) as error:
            raise InputError(hide(f"template error: {error}", host.become_password),
                             source=self.source, line=self.line, field=where) from None
        except ParamError as error:
            raise InputError(hide(f"{error}; valid: {', '.join(param_names(JobParams))}",
                                  host.become_password),
                             source=self.source, line=self.line,
                             field=f"{where} {error.field}") from None


@dataclass(frozen=True)
class Play:
    name: str
    hosts: tuple[Host, ...]
    tasks: tuple[TaskSpec, ...]
    job: JobSpec | None = None
    pattern: str = "all"
    serial: tuple[serial.SerialValue, ...] = ()  # one batch of every host
    max_fail_percentage: float | None = None


@dataclass(frozen=True)
class Playbook:
    path: Path
    plays: tuple[Play, ...]


def load_playbook(path: Path, inventory: Inventory,
                  extra_vars: Mapping[str, Any] | None = None) -> Playbook:
    """Load a playbook and check it against the inventory: task types, parameter names,
    template variables, and every parameter value that does not depend on facts.
    ``extra_vars`` (-e, already in every host's vars) win over the plays' vars."""
    source = str(path)
    data = load_yaml_file(path)
    if not isinstance(data, YamlList):
        raise InputError("a playbook is a list of plays (- name: ..., hosts: ..., tasks: ...)",
                         source=source, line=1)
    templates = Templates()  # one per playbook: every host renders the same few sources
    plays = tuple(_load_play(play, data.line_of(index), source, inventory, templates,
                             frozenset(extra_vars or ()))
                  for index, play in enumerate(data))
    return Playbook(path=path, plays=plays)


def _load_play(play: Any, line: int, source: str, inventory: Inventory,
               templates: Templates, extra_names: frozenset[str]) -> Play:
    if not isinstance(play, YamlMap):
        raise InputError("a play is a mapping with name, hosts and tasks", source=source,
                         line=line)
    for key in play:
        if key not in PLAY_KEYS:
            raise InputError(f"unknown play key {key!r}; valid: {', '.join(PLAY_KEYS)}",
                             source=source, line=play.line_of(key), field=key)
    name = str(play.get("name", "play"))
    pattern = play.get("hosts")
    if not isinstance(pattern, (str, list)) or not pattern:
        raise InputError("hosts: is required: all, a group, host names or globs",
                         source=source, line=play.line, field=f"play {name!r} hosts")
    try:
        hosts = inventory.select(pattern if isinstance(pattern, str) else ",".join(pattern))
    except InputError as error:
        raise InputError(error.message, source=source, line=play.line_of("hosts"),
                         field=f"play {name!r} hosts") from None
    play_vars = play.get("vars") or {}
    if not isinstance(play_vars, Mapping):
        raise InputError("vars: must be a mapping", source=source, line=play.line_of("vars"),
                         field=f"play {name!r} vars")
    play_vars = {key: value for key, value in play_vars.items() if key not in extra_names}
    job = _load_job(play, source, play_vars, hosts, templates)
    tasks = play.get("tasks", YamlList() if job else None)
    if not isinstance(tasks, YamlList):
        raise InputError("tasks: must be a list of tasks", source=source,
                         line=play.line_of("tasks"), field=f"play {name!r} tasks")
    specs = tuple(_load_task(task, tasks.line_of(index), source, play_vars, templates)
                  for index, task in enumerate(tasks))
    for spec in specs:
        _check_against_hosts(spec, hosts, inventory)
    return Play(name=name, hosts=tuple(hosts), tasks=specs, job=job,
                pattern=pattern if isinstance(pattern, str) else ",".join(pattern),
                **serial.rolling(play, source, name))


def _load_job(play: YamlMap, source: str, play_vars: Mapping[str, Any],
              hosts: Sequence[Host], templates: Templates) -> JobSpec | None:
    if "job" not in play:
        if "tags" in play:
            raise InputError("play-level tags: go with job:; tag tasks one by one",
                             source=source, line=play.line_of("tags"), field="tags")
        return None
    params = play["job"] if play["job"] is not None else YamlMap()
    if not isinstance(params, Mapping):
        raise InputError(f"job: must be a mapping; valid: {', '.join(param_names(JobParams))}",
                         source=source, line=play.line_of("job"), field="job")
    tags = play.get("tags", ())
    tags = (tags,) if isinstance(tags, str) else tags
    if not isinstance(tags, (list, tuple)) or not all(isinstance(tag, str) for tag in tags):
        raise InputError("tags: must be a list of words", source=source,
                         line=play.line_of("tags"), field="tags")
    spec = JobSpec(dict(params), dict(play_vars), tuple(tags), source, play.line_of("job"),
                   templates)
    spec.params_for(hosts[0])
    return spec


def _load_task(task: Any, line: int, source: str, play_vars: Mapping[str, Any],
               templates: Templates) -> TaskSpec:
    if not isinstance(task, YamlMap):
        raise InputError("a task is a mapping: name, one task type with its parameters, tags",
                         source=source, line=line)
    types = [key for key in task if key not in TASK_KEYS]
    name = str(task.get("name", types[0] if types else "task"))
    if len(types) != 1 or types[0] not in REGISTRY:
        unknown = [key for key in types if key not in REGISTRY]
        problem = (f"unknown task type {unknown[0]!r}" if unknown else
                   "a task needs exactly one task type" if not types else
                   f"a task has one task type, found {', '.join(types)}")
        raise InputError(f"{problem}; valid: {', '.join(REGISTRY)}", source=source,
                         line=task.line_of(unknown[0]) if unknown else task.line,
                         field=f"task {name!r}")
    task_type = REGISTRY[types[0]]
    params = task[types[0]] if task[types[0]] is not None else YamlMap()
    if not isinstance(params, Mapping):
        raise InputError(f"parameters of {task_type.name} must be a mapping; valid: "
                         f"{', '.join(param_names(task_type.params))}", source=source,
                         line=task.line_of(types[0]), field=f"task {name!r}")
    valid = param_names(task_type.params)
    for key in params:
        if key not in valid:
            raise InputError(f"unknown parameter {key!r}; valid: {', '.join(valid)}",
                             source=source, line=params.line_of(key) if isinstance(
                                 params, YamlMap) else line, field=f"task {name!r} {key}")
    tags = task.get("tags", ())
    tags = (tags,) if isinstance(tags, str) else tags
    if not isinstance(tags, (list, tuple)) or not all(isinstance(tag, str) for tag in tags):
        raise InputError("tags: must be a list of words", source=source,
                         line=task.line_of("tags"), field=f"task {name!r} tags")
    return TaskSpec(
        name=name, type=task_type, raw_params=dict(params), tags=tuple(tags),
        play_vars=dict(play_vars), source=source, line=task.line,
        param_lines=dict(params.key_lines) if isinstance(params, YamlMap) else {},
        templates=templates,
    )


def _check_against_hosts(spec: TaskSpec, hosts: Sequence[Host], inventory: Inventory) -> None:
    """Undefined template variables, and values that are known before connecting."""
    for key, value in spec.raw_params.items():
        try:
            names = spec.templates.referenced_names(value)
        except TemplateError as error:
            raise spec.error(f"template syntax error: {error}", key) from None
        for host in hosts:
            known = set(host.vars) | set(spec.play_vars) | BUILTIN_NAMES
            missing = sorted(names - known)
            if missing:
                raise spec.error(f"undefined variable {missing[0]!r} for host {host.name}; "
                                 "define it in the inventory or the play's vars", key)
    if not spec.needs_facts:
        for host in hosts:
            spec.params_for(host, inventory.groups, None)
