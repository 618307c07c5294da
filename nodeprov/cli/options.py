"""The command line's options, one definition each, so every command gives them one meaning::

    @app.command()
    def facts(inventory: InventoryArg = None, limit: LimitOpt = None,
              forks: ForksOpt = DEFAULT_FORKS, accept_new_host_keys: AcceptKeysOpt = False,
              json_path: JsonOpt = None) -> None:

Typer ``Annotated`` aliases only; what an option does lives in the library. Every command
that connects takes Ansible's options as one set (``takes_ansible_options``). ``nodeprov run``
keeps what follows ``--`` for the job (``AfterDashDash``, ``job_command``).
"""

from __future__ import annotations

import functools
import inspect
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer
from typer.core import TyperCommand

from nodeprov.cli.exits import exit_on_error
from nodeprov.config.defaults import AnsibleOptions, CommandLine
from nodeprov.errors import InputError
from nodeprov.util import reportfile

COMMAND_KEY = "nodeprov.run.command"  # where AfterDashDash keeps the words after --

InventoryArg = Annotated[list[Path] | None, typer.Argument(
    help="Inventory sources (Ansible INI or YAML, a directory, a script, or ansible-inventory "
    "--list JSON), merged in order as Ansible merges -i a -i b. Default: ansible.cfg's "
    "inventory, else $NODEPROV_INVENTORY, else ./inventory.yaml.",
    show_default=False, readable=False)]  # readable: nodeprov says it, in one line
PlaybookOpt = Annotated[Path | None, typer.Option(
    "--playbook", "-p", help="Playbook to run (default: the built-in site.yaml).",
    readable=False)]
LimitOpt = Annotated[str | None, typer.Option(
    "--limit", "-l", help="Only these hosts, an Ansible pattern: a:b, a,b, a:&b, a:!b, !b, "
    "~regex, group[0:2], globs, @file.")]
ForksOpt = Annotated[int | None, typer.Option(
    "--forks", "-f", help="Hosts handled in parallel (default: forks in ansible.cfg, else 32).",
    min=1, show_default=False)]
AcceptKeysOpt = Annotated[bool, typer.Option(
    "--accept-new-host-keys", help="Trust and record unknown SSH host keys (changed keys are "
    "always refused).")]


def report_path_option(option: str) -> Callable[[str | None], str | None]:
    """A Typer callback checking a report option's PATH as the command line is read, before
    anything runs (``util.reportfile``): a symlink, a folder or an unwritable place is exit 2
    then, not a traceback after the whole run.

        HtmlOpt = Annotated[str | None, typer.Option("--html", callback=report_path_option(
            "--html"))]
    """
    def checked(value: str | None) -> str | None:
        if value is None:
            return None
        with exit_on_error():
            return reportfile.checked_target(value, option=option)
    return checked


JsonOpt = Annotated[str | None, typer.Option(
    "--json", callback=report_path_option("--json"),
    help="Write the JSON report (report.schema.json) to PATH ('-' for stdout, then "
    "nothing else goes to stdout).", metavar="PATH")]
HtmlOpt = Annotated[str | None, typer.Option(
    "--html", callback=report_path_option("--html"),
    help="Also write the report as one HTML page to PATH ('-' for stdout, then nothing else "
    "goes to stdout): the sweep's chart, the connectivity grid, the timeline (docs/report.md).",
    metavar="PATH")]
SlowNodesOpt = Annotated[bool, typer.Option(
    "--slow-nodes", help="Find only the slow nodes: run the pairs (as --pairwise, which it "
    "implies) in rounds of disjoint pairs and stop once the nodes behind the slow pairs are "
    "named, usually after two rounds (docs/verify.md).")]
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
RebaselineOpt = Annotated[bool, typer.Option(
    "--rebaseline", help="Record this run's bus bandwidth as the baseline even where one is "
    "stored (after a deliberate change: other links, another NCCL); without it the stored "
    "baseline is kept and a run below it fails.")]
ListTasksOpt = Annotated[bool, typer.Option(
    "--list-tasks", help="List the tasks each play would run, with their tags, then stop (no "
    "connection).")]


# Ansible's own options, with Ansible's names and precedence (docs/ansible.md)
InventoryOpt = Annotated[list[Path] | None, typer.Option(
    "--inventory", "-i", help="An inventory source, as INVENTORY (read after those). "
    "Repeatable.", metavar="SOURCE", readable=False)]
VaultIdOpt = Annotated[list[str] | None, typer.Option(
    "--vault-id", help="A vault identity, LABEL@SOURCE: a password file, an executable that "
    "prints the password, or prompt. Repeatable.", metavar="LABEL@SOURCE")]
VaultPasswordFileOpt = Annotated[list[Path] | None, typer.Option(
    "--vault-password-file", "--vault-pass-file", help="A vault password file, or an "
    "executable that prints the password. Repeatable.", metavar="FILE", readable=False)]
AskVaultPassOpt = Annotated[bool, typer.Option(
    "--ask-vault-pass", "--ask-vault-password", "-J", help="Ask for the vault password.")]
AskBecomePassOpt = Annotated[bool, typer.Option(
    "--ask-become-pass", "-K", help="Ask for the sudo password (an inventory's "
    "ansible_become_password wins, as in Ansible).")]
BecomeOpt = Annotated[bool, typer.Option(
    "--become", "-b", help="Use sudo on the nodes (ansible_become wins).")]
BecomeUserOpt = Annotated[str | None, typer.Option(
    "--become-user", help="The user sudo runs as: root, the only one nodeprov's tasks "
    "work as.", metavar="USER")]
UserOpt = Annotated[str | None, typer.Option(
    "--user", "-u", help="SSH user (ansible_user wins, as in Ansible).", metavar="USER")]
def key_file(value: Path | None) -> Path | None:
    """A Typer callback: --private-key names a file that exists, checked as the command line
    is read (a missing key was a connection error on every host, exit 1, with a hint about
    sshd; /dev/zero was read forever)."""
    if value is None:
        return None
    with exit_on_error():
        try:
            mode = value.stat().st_mode
        except OSError as error:
            raise InputError(f"{value}: {error.strerror}; give the SSH private key's file",
                             field="--private-key") from None
        if not stat.S_ISREG(mode):
            raise InputError(f"{value} is not a regular file; give the SSH private key's file",
                             field="--private-key")
        if not os.access(value, os.R_OK):  # else every host fails to connect, each saying why
            raise InputError(f"{value}: permission denied; give a key file this user can read",
                             field="--private-key")
    return value


PrivateKeyOpt = Annotated[Path | None, typer.Option(
    "--private-key", "--key-file", help="SSH private key (ansible_ssh_private_key_file "
    "wins).", metavar="FILE", callback=key_file, readable=False)]
TimeoutOpt = Annotated[int | None, typer.Option(
    "--timeout", "-T", help="Seconds to open an SSH connection (ansible_ssh_timeout wins; "
    "default: timeout in ansible.cfg, else 10).", min=1, show_default=False)]

# nodeprov run's --timeout is the job's deadline: there, -T is --connect-timeout
ConnectTimeoutOpt = Annotated[int | None, typer.Option(
    "--connect-timeout", "-T", help="Seconds to open an SSH connection (as -T/--timeout "
    "elsewhere).", min=1, show_default=False)]


# parameter: (option, default); -T is apart: run names it otherwise (takes_ansible_options)
ANSIBLE_OPTIONS: dict[str, tuple[object, object]] = {
    "inventory_option": (InventoryOpt, None), "vault_id": (VaultIdOpt, None),
    "vault_password_file": (VaultPasswordFileOpt, None),
    "ask_vault_pass": (AskVaultPassOpt, False), "ask_become_pass": (AskBecomePassOpt, False),
    "become": (BecomeOpt, False), "become_user": (BecomeUserOpt, None),
    "user": (UserOpt, None), "private_key": (PrivateKeyOpt, None)}


def ansible_options(*, inventory_option: list[Path] | None = None,  # noqa: PLR0913 its parameters are the Typer options in ANSIBLE_OPTIONS
                    vault_id: list[str] | None = None,
                    vault_password_file: list[Path] | None = None, ask_vault_pass: bool = False,
                    ask_become_pass: bool = False, become: bool = False,
                    become_user: str | None = None, user: str | None = None,
                    private_key: Path | None = None, timeout: int | None = None
                    ) -> AnsibleOptions:
    """The options above, as the library takes them (paths from the current folder)."""
    return AnsibleOptions(
        inventories=tuple(inventory_option or ()), vault_ids=tuple(vault_id or ()),
        vault_password_files=tuple(os.path.abspath(p) for p in vault_password_file or ()),
        ask_vault_pass=ask_vault_pass, ask_become_pass=ask_become_pass,
        command_line=CommandLine(user=user, private_key=os.path.abspath(private_key)
                                 if private_key else None, timeout=timeout, become=become,
                                 become_user=become_user))


def takes_ansible_options(timeout: tuple[str, object] = ("timeout", TimeoutOpt)
                          ) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Give a command all of Ansible's options above, after its own, and call it with them
    as one ``ansible: AnsibleOptions``; ``timeout`` names the -T option's parameter::

        @app.command()
        @takes_ansible_options(timeout=("ssh_timeout", ConnectTimeoutOpt))
        def run(ansible: AnsibleOptions, ctx: typer.Context, ...) -> None:

    Typer reads a command's options from its signature (it has no shared option sets:
    fastapi/typer#153), so the wrapper's signature is the command's without ``ansible``,
    then these options.
    """
    timeout_param, timeout_option = timeout
    added = {**ANSIBLE_OPTIONS, timeout_param: (timeout_option, None)}

    def decorate(command: Callable[..., None]) -> Callable[..., None]:
        signature = inspect.signature(command, eval_str=True)  # Typer takes types, not strings
        shown = [*(p for p in signature.parameters.values() if p.name != "ansible"),
                 *(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default,
                                     annotation=option)
                   for name, (option, default) in added.items())]

        @functools.wraps(command)
        def with_ansible(*args: Any, **kwargs: Any) -> None:
            given = {name: kwargs.pop(name) for name in ANSIBLE_OPTIONS}
            command(*args, ansible=ansible_options(timeout=kwargs.pop(timeout_param), **given),
                    **kwargs)

        merged = signature.replace(parameters=shown)
        with_ansible.__signature__ = merged  # type: ignore[attr-defined]
        with_ansible.__annotations__ = {p.name: p.annotation for p in shown}
        return with_ansible
    return decorate


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
