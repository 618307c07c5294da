"""The nodeprov command line: thin wrappers over the library.

Exit codes: 0 all good; 1 a host failed, was unreachable, or a check failed; 2 invalid input or
usage (nothing was changed on any node).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from nodeprov.errors import InputError, NodeprovError
from nodeprov.job.runargs import AfterDashDash
from nodeprov.testbed.cli import app as testbed_app

app = typer.Typer(
    help="Provision multi-node PyTorch clusters over SSH: torch matched to the driver, ufw, "
         "/etc/hosts, IPv6 and NCCL env, then a torchrun all-reduce check.\n\n"
         "Exit codes: 0 all good, 1 a host failed or a check failed, 2 invalid input.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(testbed_app, name="testbed")

InventoryArg = Annotated[Path | None, typer.Argument(
    help="Inventory (Ansible YAML format). Default: ./inventory.yaml, else $NODEPROV_INVENTORY.",
    show_default=False)]
LimitOpt = Annotated[str | None, typer.Option(
    "--limit", "-l", help="Only these hosts: names, groups, globs, comma-separated, !excluded.")]
ForksOpt = Annotated[int, typer.Option(help="Hosts handled in parallel.", min=1)]
AcceptKeysOpt = Annotated[bool, typer.Option(
    "--accept-new-host-keys", help="Trust and record unknown SSH host keys (changed keys are "
    "always refused).")]
JsonOpt = Annotated[str | None, typer.Option(
    "--json", help="Write a machine-readable report to PATH ('-' for stdout, then nothing else "
    "goes to stdout).", metavar="PATH")]


def resolve_inventory(given: Path | None) -> Path:
    if given is not None:
        return given
    if Path("inventory.yaml").exists():
        return Path("inventory.yaml")
    if os.environ.get("NODEPROV_INVENTORY"):
        return Path(os.environ["NODEPROV_INVENTORY"])
    raise InputError("no inventory: give a path, create ./inventory.yaml, or set "
                     "NODEPROV_INVENTORY")


def fail(error: NodeprovError) -> NoReturn:
    typer.echo(f"nodeprov: {error}", err=True)
    raise typer.Exit(error.exit_code)


@app.command()
def apply(
    inventory: InventoryArg = None,
    playbook: Annotated[Path | None, typer.Option(
        "--playbook", "-p", help="Playbook to run (default: the built-in site.yaml).")] = None,
    check: Annotated[bool, typer.Option("--check", help="Change nothing; report what would "
                                        "change.")] = False,
    diff: Annotated[bool, typer.Option("--diff", help="Show unified diffs of managed files.")]
    = False,
    limit: LimitOpt = None,
    tags: Annotated[str | None, typer.Option(
        "--tags", "-t", help="Only tasks with one of these tags (comma-separated).")] = None,
    forks: ForksOpt = 32,
    accept_new_host_keys: AcceptKeysOpt = False,
    json_path: JsonOpt = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Also say why unchanged tasks "
                                          "are in sync.")] = False,
) -> None:
    """Make every node match the playbook (default: the full nodeprov setup)."""
    from nodeprov.commands import run_apply

    try:
        code = run_apply(resolve_inventory(inventory), playbook, check=check, diff=diff,
                         limit=limit, tags=tags, forks=forks,
                         accept_new_host_keys=accept_new_host_keys, json_path=json_path,
                         verbose=verbose)
    except NodeprovError as error:
        fail(error)
    raise typer.Exit(code)


@app.command()
def facts(
    inventory: InventoryArg = None,
    limit: LimitOpt = None,
    forks: ForksOpt = 32,
    accept_new_host_keys: AcceptKeysOpt = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
    = False,
) -> None:
    """Show what nodeprov reads from each node (one SSH round trip per node)."""
    from nodeprov.commands import run_facts

    try:
        code = run_facts(resolve_inventory(inventory), limit=limit, forks=forks,
                         accept_new_host_keys=accept_new_host_keys, as_json=as_json)
    except NodeprovError as error:
        fail(error)
    raise typer.Exit(code)


@app.command()
def verify(
    inventory: InventoryArg = None,
    playbook: Annotated[Path | None, typer.Option(
        "--playbook", "-p", help="Playbook whose promises are checked (default: the built-in "
        "site.yaml).")] = None,
    limit: LimitOpt = None,
    accept_new_host_keys: AcceptKeysOpt = False,
    json_path: JsonOpt = None,
    job: Annotated[bool, typer.Option(
        "--job/--no-job", help="After the checks, run the connectivity matrix and the "
        "verification job, and compare bandwidth with apply's baseline.")] = True,
    pairwise: Annotated[bool, typer.Option(
        "--pairwise", help="Also run the job on every pair of nodes, one pair at a time, "
        "slowest pair first, to find a slow link (N(N-1)/2 short jobs).")] = False,
) -> None:
    """Check that every node is as apply left it; print each drift and its repair command,
    then prove the cluster again with the job. Changes nothing.

    The same checks run with pytest: pytest --pyargs nodeprov.checks --inventory INVENTORY
    """
    from nodeprov.verify import run_verify

    try:
        if pairwise and not job:
            raise InputError("--pairwise runs the job on pairs of nodes: drop --no-job")
        code = run_verify(resolve_inventory(inventory), playbook, limit=limit,
                          accept_new_host_keys=accept_new_host_keys, json_path=json_path,
                          job=job, pairwise=pairwise)
    except NodeprovError as error:
        fail(error)
    raise typer.Exit(code)


@app.command(cls=AfterDashDash, no_args_is_help=True)
def run(
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
        help="Set KEY=VALUE for every rank (repeatable).", metavar="KEY=VALUE")] = None,
    timeout: Annotated[int, typer.Option(help="Stop every rank after this many seconds "
                                         "(0: no deadline).", metavar="SECONDS")] = 0,
    preflight: Annotated[bool, typer.Option(
        "--preflight/--no-preflight", help="Run the connectivity matrix first and refuse to "
        "start when a node cannot reach another.")] = True,
    forks: ForksOpt = 32,
    accept_new_host_keys: AcceptKeysOpt = False,
    json_path: JsonOpt = None,
) -> None:
    """Run your torchrun script on every node at once: nodeprov run [INVENTORY] [OPTIONS] --
    SCRIPT [ARGS...]. Rank 0 is shown live, every node's output is kept in a log beside the
    inventory; the first failure, Ctrl-C or the timeout stops every rank on every node."""
    from nodeprov.job.runargs import job_command, parse_request
    from nodeprov.runcommand import run_command

    try:
        request = parse_request(job_command(ctx), nproc=nproc_per_node, chdir=chdir, sync=sync,
                                env=env or [], timeout=timeout, preflight=preflight)
        code = run_command(resolve_inventory(inventory), request, limit=limit, forks=forks,
                           accept_new_host_keys=accept_new_host_keys, json_path=json_path)
    except NodeprovError as error:
        fail(error)
    raise typer.Exit(code)
