"""What each command was asked to do: one frozen request, built once by its Typer command
function in ``cli/`` from the options and handed down whole, as pip hands down ``options``::

    request = ApplyRequest(inventory=[Path("cluster.yaml")], check=True, diff=True)
    code = run_apply(request, Redactor())

Every field is an option as given (``extra_vars`` the raw ``-e`` words); the command module
checks and reads them (``commands.opening``), so a bad value is still one InputError there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nodeprov.config.defaults import AnsibleOptions
from nodeprov.errors import InputError
from nodeprov.userjob.runargs import RunRequest


@dataclass(frozen=True, kw_only=True)
class Request:
    """What every command that reads the inventory takes: INVENTORY, Ansible's options, -e."""

    inventory: Sequence[Path] | None = None
    ansible: AnsibleOptions = field(default_factory=AnsibleOptions)
    extra_vars: Sequence[str] = ()


@dataclass(frozen=True, kw_only=True)
class ReachRequest(Request):
    """What every command that connects to the nodes adds: which, how many at once, host keys,
    where its JSON report and its HTML page go (facts draws none)."""

    limit: str | None = None
    forks: int | None = None
    accept_new_host_keys: bool = False
    json_path: str | None = None
    html_path: str | None = None


FactsRequest = ReachRequest  # nodeprov facts takes nothing more


@dataclass(frozen=True, kw_only=True)
class PlaybookRequest(ReachRequest):
    """What apply and verify add: the playbook (None: nodeprov's own)."""

    playbook: Path | None = None


@dataclass(frozen=True, kw_only=True)
class ApplyRequest(PlaybookRequest):
    """``nodeprov apply``'s options."""

    check: bool = False
    diff: bool = False
    verbose: bool = False
    tags: str | None = None
    skip_tags: str | None = None
    list_hosts: bool = False
    list_tasks: bool = False
    rebaseline: bool = False


@dataclass(frozen=True, kw_only=True)
class VerifyRequest(PlaybookRequest):
    """``nodeprov verify``'s options: ``pairwise`` is true with ``slow_nodes`` too, and
    either without ``job`` is an InputError."""

    job: bool = True
    pairwise: bool = False
    slow_nodes: bool = False

    def __post_init__(self) -> None:
        if self.pairwise and not self.job:
            raise InputError("--pairwise and --slow-nodes run the job on pairs of nodes: drop "
                             "--no-job")


@dataclass(frozen=True, kw_only=True)
class RunCommandRequest(ReachRequest):
    """``nodeprov run``'s options: ``job`` is the user's job, checked (``userjob.runargs``)."""

    job: RunRequest


@dataclass(frozen=True, kw_only=True)
class InventoryRequest(Request):
    """``nodeprov inventory``'s options: one of --list, --graph GROUP, --host NAME."""

    as_list: bool = False
    graph: str | None = None
    host: str | None = None
    show_vaulted: bool = False
