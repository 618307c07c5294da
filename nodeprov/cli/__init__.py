"""The nodeprov command line (``nodeprov.__main__`` runs ``app``, the entry point): it parses
the options, each defined once in ``cli.options`` so it has one meaning on every command, runs
the command's module from ``nodeprov.commands`` (imported only then: ``--help`` stays fast) and
maps its errors to the exit code in one place (``cli.exits``; the codes: ``nodeprov.errors``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn, TypeVar

import typer

from nodeprov.cli.exits import exit_on_error
from nodeprov.cli.fabric import fabric_command
from nodeprov.cli.options import (
    AcceptKeysOpt,
    AfterDashDash,
    AskVaultPassOpt,
    ConnectTimeoutOpt,
    ExtraVarsOpt,
    ForksOpt,
    HtmlOpt,
    InventoryArg,
    InventoryOpt,
    JsonOpt,
    LimitOpt,
    ListHostsOpt,
    ListTasksOpt,
    PlaybookOpt,
    RebaselineOpt,
    SkipTagsOpt,
    SlowNodesOpt,
    TagsOpt,
    VaultIdOpt,
    VaultPasswordFileOpt,
    ansible_options,
    job_command,
    takes_ansible_options,
)
from nodeprov.cli.testbed import app as testbed_app
from nodeprov.config.defaults import AnsibleOptions
from nodeprov.util.redact import Redactor

if TYPE_CHECKING:
    from nodeprov.commands.requests import ReachRequest

R = TypeVar("R", bound="ReachRequest")

app = typer.Typer(
    help="Provision multi-node PyTorch clusters over SSH: torch matched to the driver, ufw, "
         "/etc/hosts, IPv6 and NCCL env, then a torchrun all-reduce check.\n\n"
         "Exit codes: 0 all good, 1 a host failed or a check failed, 2 invalid input, "
         "130 Ctrl-C, 141 the reader of the output went away (| head).",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(testbed_app, name="testbed")
app.command("fabric")(fabric_command)


def _show_version(asked: bool) -> None:
    if asked:
        from nodeprov import __version__

        typer.echo(f"nodeprov {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[bool, typer.Option(
        "--version", help="Show nodeprov's version and exit.", is_eager=True,
        callback=_show_version)] = False,
) -> None:
    """The options before the command (nodeprov --version)."""


def _run_request(run: Callable[[R, Redactor], int], request: Callable[[], R]) -> NoReturn:
    """Build the command's request, refuse a report path that is one of its inputs, run it,
    and exit with its code; every error said as nodeprov says it, every secret masked."""
    from nodeprov.commands.outputs import refuse_overwrite
    from nodeprov.commands.requests import PlaybookRequest

    redactor = Redactor()
    with redactor.streams(), exit_on_error():
        asked = request()
        refuse_overwrite({"--json": asked.json_path, "--html": asked.html_path}, asked.ansible,
                         inventory=asked.inventory, extra_vars=asked.extra_vars,
                         playbook=asked.playbook if isinstance(asked, PlaybookRequest) else None)
        code = run(asked, redactor)
    raise typer.Exit(code)


@app.command()
@takes_ansible_options()
def apply(
    ansible: AnsibleOptions,
    inventory: InventoryArg = None,
    playbook: PlaybookOpt = None,
    check: Annotated[bool, typer.Option("--check", "-C", help="Change nothing; report what "
                                        "would change.")] = False,
    diff: Annotated[bool, typer.Option("--diff", "-D", help="Show unified diffs of managed "
                                       "files.")] = False,
    limit: LimitOpt = None,
    tags: TagsOpt = None,
    skip_tags: SkipTagsOpt = None,
    extra_vars: ExtraVarsOpt = None,
    forks: ForksOpt = None,
    accept_new_host_keys: AcceptKeysOpt = False,
    json_path: JsonOpt = None,
    html_path: HtmlOpt = None,
    list_hosts: ListHostsOpt = False,
    list_tasks: ListTasksOpt = False,
    rebaseline: RebaselineOpt = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Also say why unchanged tasks "
                                          "are in sync.")] = False,
) -> None:
    """Make every node match the playbook (default: the full nodeprov setup)."""
    from nodeprov.commands.apply import run_apply
    from nodeprov.commands.requests import ApplyRequest

    _run_request(run_apply, lambda: ApplyRequest(
        inventory=inventory, ansible=ansible, extra_vars=tuple(extra_vars or ()),
        limit=limit, forks=forks, accept_new_host_keys=accept_new_host_keys,
        json_path=json_path, playbook=playbook, html_path=html_path, check=check,
        diff=diff, verbose=verbose, tags=tags, skip_tags=skip_tags, list_hosts=list_hosts,
        list_tasks=list_tasks, rebaseline=rebaseline))


@app.command()
@takes_ansible_options()
def facts(
    ansible: AnsibleOptions,
    inventory: InventoryArg = None,
    limit: LimitOpt = None,
    extra_vars: ExtraVarsOpt = None,
    forks: ForksOpt = None,
    accept_new_host_keys: AcceptKeysOpt = False,
    json_path: JsonOpt = None,
) -> None:
    """Show what nodeprov reads from each node (one SSH round trip per node)."""
    from nodeprov.commands.facts import run_facts
    from nodeprov.commands.requests import FactsRequest

    _run_request(run_facts, lambda: FactsRequest(
        inventory=inventory, ansible=ansible, extra_vars=tuple(extra_vars or ()),
        limit=limit, forks=forks, accept_new_host_keys=accept_new_host_keys,
        json_path=json_path))


@app.command()
@takes_ansible_options()
def verify(
    ansible: AnsibleOptions,
    inventory: InventoryArg = None,
    playbook: PlaybookOpt = None,
    limit: LimitOpt = None,
    extra_vars: ExtraVarsOpt = None,
    forks: ForksOpt = None,
    accept_new_host_keys: AcceptKeysOpt = False,
    json_path: JsonOpt = None,
    html_path: HtmlOpt = None,
    job: Annotated[bool, typer.Option(
        "--job/--no-job", help="After the checks, run the connectivity matrix and the "
        "verification job, and compare bandwidth with apply's baseline.")] = True,
    pairwise: Annotated[bool, typer.Option(
        "--pairwise", help="Also run the job on every pair of nodes, disjoint pairs at once "
        "in N-1 rounds, each pair's busbw against its link, to find a slow node or link.")
    ] = False,
    slow_nodes: SlowNodesOpt = False,
) -> None:
    """Check that every node is as apply left it; print each drift and its repair command,
    then prove the cluster again with the job. Changes nothing.

    The checks a plan cannot see also run with pytest: pytest -p nodeprov.checks --pyargs
    nodeprov.checks --inventory INVENTORY
    """
    from nodeprov.commands.requests import VerifyRequest
    from nodeprov.commands.verify import run_verify

    _run_request(run_verify, lambda: VerifyRequest(
        inventory=inventory, ansible=ansible, extra_vars=tuple(extra_vars or ()),
        limit=limit, forks=forks, accept_new_host_keys=accept_new_host_keys,
        json_path=json_path, playbook=playbook, html_path=html_path, job=job,
        pairwise=pairwise or slow_nodes, slow_nodes=slow_nodes))


@app.command("report")
def report_command(
    report: Annotated[Path, typer.Argument(
        help="A JSON report, as --json of apply, verify, facts or run wrote it.",
        metavar="REPORT.json", show_default=False, readable=False)],
    html_path: HtmlOpt = None,
) -> None:
    """Draw a saved JSON report as one HTML page that any browser opens from disk: nodeprov
    report apply.json --html apply.html"""
    from nodeprov.commands.outputs import refuse_overwrite
    from nodeprov.commands.report import run_report

    with exit_on_error():
        refuse_overwrite({"--html": html_path}, also=[("report", report)])
        code = run_report(report, html_path)
    raise typer.Exit(code)


@app.command("inventory")
def inventory_command(
    inventory: InventoryArg = None,
    inventory_option: InventoryOpt = None,
    as_list: Annotated[bool, typer.Option("--list", help="Print the resolved inventory as "
                                          "ansible-inventory --list does (JSON).")] = False,
    graph: Annotated[str | None, typer.Option(
        "--graph", help="Print the group tree from GROUP ('all' for everything).",
        metavar="GROUP")] = None,
    host: Annotated[str | None, typer.Option("--host", help="Print one host's vars (JSON).",
                                             metavar="NAME")] = None,
    extra_vars: ExtraVarsOpt = None,
    show_vaulted: Annotated[bool, typer.Option(
        "--show-vaulted", help="Show the values of vault-encrypted files decrypted, as "
        "ansible-inventory does (default: <vaulted>).")] = False,
    vault_id: VaultIdOpt = None,
    vault_password_file: VaultPasswordFileOpt = None,
    ask_vault_pass: AskVaultPassOpt = False,
) -> None:
    """Show the inventory as nodeprov (and Ansible) resolve it; connects to nothing."""
    from nodeprov.commands.inventory import show_inventory
    from nodeprov.commands.requests import InventoryRequest

    redactor = Redactor()
    with redactor.streams(), exit_on_error():
        ansible = ansible_options(inventory_option=inventory_option, vault_id=vault_id,
                                  vault_password_file=vault_password_file,
                                  ask_vault_pass=ask_vault_pass)
        shown = show_inventory(InventoryRequest(
            inventory=inventory, ansible=ansible, extra_vars=tuple(extra_vars or ()),
            as_list=as_list, graph=graph, host=host, show_vaulted=show_vaulted), redactor)
    typer.echo(shown)  # asked for: shown as it is


@app.command("config")
def config_command() -> None:
    """Show the Ansible settings nodeprov uses (ansible.cfg and ANSIBLE_* variables), where
    each comes from, as ansible-config dump --only-changed shows them, and what it does not use.
    """
    from nodeprov.commands.config import show_config

    with exit_on_error():
        typer.echo(show_config())


@app.command(cls=AfterDashDash, no_args_is_help=True)
@takes_ansible_options(timeout=("ssh_timeout", ConnectTimeoutOpt))
def run(
    ansible: AnsibleOptions,
    ctx: typer.Context,
    inventory: InventoryArg = None,
    limit: LimitOpt = None,
    nproc_per_node: Annotated[str, typer.Option(
        help="Processes per node: a number, or auto (one per GPU, 1 on a CPU node).")] = "auto",
    chdir: Annotated[str | None, typer.Option(
        help="Start the script in this directory on every node (default: the --sync directory, "
        "else the login's home).", metavar="DIR")] = None,
    sync: Annotated[str | None, typer.Option(
        help="Copy this local directory to the same path on every node first (only what "
        "changed).", metavar="DIR")] = None,
    env: Annotated[list[str] | None, typer.Option(
        help="Set KEY=VALUE for every rank (repeatable); KEY alone passes this machine's "
        "value. Values reach the ranks in a private file, never on a command line.",
        metavar="KEY[=VALUE]")] = None,
    timeout: Annotated[int, typer.Option(help="Stop every rank after this many seconds "
                                         "(0: no deadline).", metavar="SECONDS")] = 0,
    preflight: Annotated[bool, typer.Option(
        "--preflight/--no-preflight", help="Run the connectivity matrix first and refuse to "
        "start when a node cannot reach another.")] = True,
    forks: ForksOpt = None,
    accept_new_host_keys: AcceptKeysOpt = False,
    json_path: JsonOpt = None,
    html_path: HtmlOpt = None,
) -> None:
    """Run your torchrun script on every node at once: nodeprov run [INVENTORY] [OPTIONS] --
    SCRIPT [ARGS...]. Rank 0 is shown live, every node's output is kept in a log beside the
    inventory; the first failure, Ctrl-C, SIGTERM, SIGHUP or the timeout stops every rank on
    every node, and a node stops its ranks by itself when nodeprov is gone."""
    from nodeprov.commands.requests import RunCommandRequest
    from nodeprov.commands.run import run_command
    from nodeprov.userjob.runargs import parse_request

    _run_request(run_command, lambda: RunCommandRequest(
        inventory=inventory, ansible=ansible, limit=limit, forks=forks,
        accept_new_host_keys=accept_new_host_keys, json_path=json_path, html_path=html_path,
        job=parse_request(job_command(ctx), nproc=nproc_per_node, chdir=chdir, sync=sync,
                          env=env or [], timeout=timeout, preflight=preflight)))
