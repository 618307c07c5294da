"""The command line's options, one definition each, so every command gives them one meaning::

    @app.command()
    def facts(inventory: InventoryArg = None, limit: LimitOpt = None,
              forks: ForksOpt = DEFAULT_FORKS, accept_new_host_keys: AcceptKeysOpt = False,
              json_path: JsonOpt = None) -> None:

Typer ``Annotated`` aliases only; what an option does lives in the library. ``nodeprov run``
keeps what follows ``--`` for the job (``AfterDashDash``, ``job_command``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

from nodeprov.errors import InputError

COMMAND_KEY = "nodeprov.run.command"  # where AfterDashDash keeps the words after --

InventoryArg = Annotated[Path | None, typer.Argument(
    help="Inventory (Ansible INI or YAML, a directory, a script, or ansible-inventory --list "
    "JSON). Default: ./inventory.yaml, else $NODEPROV_INVENTORY.",
    show_default=False)]
PlaybookOpt = Annotated[Path | None, typer.Option(
    "--playbook", "-p", help="Playbook to run (default: the built-in site.yaml).")]
LimitOpt = Annotated[str | None, typer.Option(
    "--limit", "-l", help="Only these hosts, an Ansible pattern: a:b, a,b, a:&b, a:!b, !b, "
    "~regex, group[0:2], globs, @file.")]
ForksOpt = Annotated[int, typer.Option("--forks", "-f", help="Hosts handled in parallel.",
                                       min=1)]
AcceptKeysOpt = Annotated[bool, typer.Option(
    "--accept-new-host-keys", help="Trust and record unknown SSH host keys (changed keys are "
    "always refused).")]
JsonOpt = Annotated[str | None, typer.Option(
    "--json", help="Write the JSON report (report.schema.json) to PATH ('-' for stdout, then "
    "nothing else goes to stdout).", metavar="PATH")]
HtmlOpt = Annotated[str | None, typer.Option(
    "--html", help="Also write the report as one HTML page to PATH: the sweep's chart, the "
    "connectivity grid, the timeline (docs/report.md).", metavar="PATH")]
TagsOpt = Annotated[str | None, typer.Option(
    "--tags", "-t", help="Only tasks (and the job) with one of these tags (comma-separated).")]
SkipTagsOpt = Annotated[str | None, typer.Option(
    "--skip-tags", help="Leave out tasks (and the job) with one of these tags "
    "(comma-separated); e.g. --skip-tags job for a quick convergence run.")]
ExtraVarsOpt = Annotated[list[str] | None, typer.Option(
    "--extra-vars", "-e", help="KEY=VALUE (several separated by spaces) or @FILE (YAML or "
    "JSON); overrides every inventory and play var. Repeatable.", metavar="VARS")]
ListHostsOpt = Annotated[bool, typer.Option(
    "--list-hosts", help="List the hosts each play would run on, then stop (no connection).")]
ListTasksOpt = Annotated[bool, typer.Option(
    "--list-tasks", help="List the tasks each play would run, with their tags, then stop (no "
    "connection).")]


def resolve_inventory(given: Path | None) -> Path:
    """The inventory given, else ./inventory.yaml if it exists, else $NODEPROV_INVENTORY."""
    if given is not None:
        return given
    if Path("inventory.yaml").exists():
        return Path("inventory.yaml")
    if os.environ.get("NODEPROV_INVENTORY"):
        return Path(os.environ["NODEPROV_INVENTORY"])
    raise InputError("no inventory: give a path, create ./inventory.yaml, or set "
                     "NODEPROV_INVENTORY")


class AfterDashDash(TyperCommand):
    """A command whose words after the first ``--`` stay out of nodeprov's parsing."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # ctx: Typer's click Context
        if "--" in args:
            at = args.index("--")
            ctx.meta[COMMAND_KEY] = args[at + 1:]
            args = args[:at]
        return super().parse_args(ctx, args)


def job_command(ctx: typer.Context) -> list[str]:
    """The words after ``--``: SCRIPT and its arguments."""
    return list(ctx.meta.get(COMMAND_KEY, []))
