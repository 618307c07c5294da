"""`nodeprov testbed up|down|status|exec`: thin wrappers over :mod:`nodeprov.testbed.lifecycle`."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Annotated

import typer

from nodeprov.cli.exits import exit_on_error
from nodeprov.testbed.layout import DEFAULT_DIR

app = typer.Typer(help="A local test cluster of simulated nodes (needs root).",
                  no_args_is_help=True)

DirOption = Annotated[Path, typer.Option("--dir", help="The testbed's state directory.")]


@app.command()
def up(
    nodes: Annotated[int, typer.Option("--nodes", "-n", help="How many nodes.")] = 3,
    subnet: Annotated[str | None, typer.Option(
        help="The nodes' IPv4 subnet (default: a free /24 in 10.0.0.0/8).")] = None,
    directory: DirOption = DEFAULT_DIR,
    outsider: Annotated[bool, typer.Option(
        "--outsider", help="Add a namespace 'outsider' in another subnet, for firewall tests.",
    )] = False,
    var: Annotated[list[str] | None, typer.Option(
        help="Extra inventory var KEY=VALUE (VALUE is YAML); repeatable.")] = None,
    share: Annotated[list[str] | None, typer.Option(
        help="A folder of this machine every node sees read-only at the same path (a mirror); "
        "repeatable. Nodes see nothing else of this machine's but its system trees.",
        metavar="PATH")] = None,
) -> None:
    """Create the nodes and write DIR/inventory.yaml and DIR/ssh_config.

    nodeprov testbed up --nodes 3 --outsider && ssh -F /srv/nodeprov-testbed/ssh_config node1
    nodeprov testbed up --share /opt/wheels --var 'pip_find_links=\\[/opt/wheels]'
    """  # \\[: Typer reads help as rich markup, where [/...] closes a tag
    from nodeprov.testbed.inventory_file import parse_vars
    from nodeprov.testbed.lifecycle import up as bring_up

    with exit_on_error():
        started = time.monotonic()
        testbed = bring_up(directory, nodes, subnet, outsider, parse_vars(var or []),
                           shared=share or [])
    typer.echo(f"{len(testbed.nodes)} nodes up in {time.monotonic() - started:.1f} s "
               f"on {testbed.subnet}")
    typer.echo(f"inventory: {testbed.inventory_path}")
    typer.echo(f"ssh:       ssh -F {testbed.ssh_config_path} {testbed.nodes[0]}")
    if testbed.state.shared:
        typer.echo(f"shared:    {', '.join(testbed.state.shared)} (read-only on every node)")
    if testbed.state.outsider:
        typer.echo(f"outsider:  {testbed.address('outsider')} "
                   f"(nodeprov testbed exec --dir {testbed.dir} outsider -- CMD)")


@app.command()
def down(directory: DirOption = DEFAULT_DIR) -> None:
    """Remove everything `up` made in DIR (safe to run twice)."""
    from nodeprov.testbed.lifecycle import down as take_down

    with exit_on_error():
        removed = take_down(directory)
    typer.echo(f"removed the testbed in {directory}" if removed else f"no testbed in {directory}")


@app.command()
def status(directory: DirOption = DEFAULT_DIR) -> None:
    """List the nodes and whether each sshd answers; exit 1 if any does not."""
    from nodeprov.testbed.cluster import Testbed
    from nodeprov.testbed.environment import require

    with exit_on_error():
        require()  # a user cannot read a node's /proc/PID/environ: every node would be GONE
        rows = Testbed.load(directory).status()
    for row in rows:
        sshd = "-" if row.sshd is None else ("sshd ok" if row.sshd else "sshd silent")
        typer.echo(f"{row.name:<10} {row.address:<15} pid {row.pid or '-':<8} "
                   f"{'running' if row.running else 'GONE':<8} {sshd}")
    if not all(row.running and row.sshd is not False for row in rows):
        raise typer.Exit(1)


@app.command(name="exec")
def exec_(
    node: Annotated[str, typer.Argument(help="A node name, or 'outsider'.")],
    command: Annotated[list[str], typer.Argument(help="The command, after --.")],
    directory: DirOption = DEFAULT_DIR,
) -> None:
    """Run a command inside a node's namespaces, without SSH; exits with its exit code.

    nodeprov testbed exec node1 -- iptables -S
    """
    from nodeprov.testbed.cluster import NODE_ENV, Testbed
    from nodeprov.testbed.environment import require

    with exit_on_error():
        require()
        argv = Testbed.load(directory).exec_argv(node, command)
    sys.stdout.flush()
    terminal = {"TERM": os.environ["TERM"]} if "TERM" in os.environ else {}
    code = subprocess.run(argv, env={**NODE_ENV, **terminal}).returncode
    raise typer.Exit(code if code >= 0 else 128 - code)  # killed by a signal: as a shell says
