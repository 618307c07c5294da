"""The nodeprov command line: thin wrappers over the library."""

from __future__ import annotations

import typer

from nodeprov.testbed.cli import app as testbed_app

app = typer.Typer(
    help="Provision multi-node PyTorch clusters over SSH.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
app.add_typer(testbed_app, name="testbed")
