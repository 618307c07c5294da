"""Where a NodeprovError becomes the command's exit, for every command (``nodeprov testbed``'s
too)::

    with exit_on_error():
        code = run_apply(...)       # InputError: "nodeprov: <one line>" on stderr, exit 2
    raise typer.Exit(code)

Each error class carries its exit code (errors.py draws the tree): 1 a host failed, 2 invalid
input or usage, 130 Ctrl-C.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import typer

from nodeprov.errors import NodeprovError
from nodeprov.util.validate import printable


@contextmanager
def exit_on_error() -> Iterator[None]:
    """A NodeprovError raised inside: its message as one line on stderr (escapes spelled out:
    it may quote a node), then exit with its code."""
    try:
        yield
    except NodeprovError as error:
        typer.echo(f"nodeprov: {printable(str(error))}", err=True)
        raise typer.Exit(error.exit_code) from None
