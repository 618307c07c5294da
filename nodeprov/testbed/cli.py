"""`nodeprov testbed ...`."""

from __future__ import annotations

import typer

app = typer.Typer(help="A local test cluster of simulated nodes (needs root).", no_args_is_help=True)
