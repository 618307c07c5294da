"""An install's bytes, counted on the node as it goes: one transfer of the live display,
started at the node's first count, ended once with the most it counted; a node that prints
anything but digits moves nothing; a count that cannot run never fails the install."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import pytest
from rich.console import Console

from nodeprov.errors import HostError
from nodeprov.inventory.model import Host
from nodeprov.remote.channel import Terms
from nodeprov.remote.options import SshOptions
from nodeprov.remote.session import Session
from nodeprov.util.progress import Transfers
from nodeprov.wheels.written import counting_writes


class HereSession:
    """``converse`` on this machine, with pipes where remote.channel has an SSH channel: the
    command says its token on stderr, its stdout goes to the echo as it comes, ``send`` runs,
    then its stdin ends."""

    def __init__(self, transfers: Transfers | None) -> None:
        self.host = Host("node1", "127.0.0.1", "127.0.0.1")
        self.options = SshOptions()
        self.transfers = transfers

    def converse(self, argv: Sequence[str], token: str, terms: Terms, **_: Any) -> None:
        try:
            process = subprocess.Popen(list(argv), stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        except FileNotFoundError:  # over SSH: the shell says so, exits 127, and no token came
            return
        with process:
            assert process.stderr is not None and process.stdout is not None
            if process.stderr.readline() != f"{token}\n":
                raise HostError(self.host.name, "torch", "it did not start")
            out, echo, send = process.stdout, terms.out, terms.send
            assert echo is not None and send is not None
            reader = threading.Thread(target=lambda: [echo.write(line) for line in out])
            reader.start()
            send(lambda data: None)
            assert process.stdin is not None
            process.stdin.close()
            reader.join(terms.timeout)
            process.wait(terms.timeout)


def here(transfers: Transfers | None) -> Session:
    return cast(Session, HereSession(transfers))


def logged() -> tuple[Transfers, io.StringIO]:
    out = io.StringIO()
    return Transfers(Console(file=out, width=300), live=False), out


def test_what_the_install_writes_is_one_transfer_with_the_most_it_counted(
        tmp_path: Path) -> None:
    transfers, out = logged()
    venv, cache = tmp_path / "venv", tmp_path / "venv.uv-cache"
    venv.mkdir()
    with counting_writes(here(transfers), "torch", "install torch==2.13.0+cpu",
                         sys.executable, (str(venv), str(cache))):
        cache.mkdir()
        (cache / "torch.so").write_bytes(b"t" * 2_500_000)
        os.link(cache / "torch.so", venv / "torch.so")
        (venv / "six.py").write_bytes(b"s" * 500_000)
    lines = out.getvalue().splitlines()
    assert lines[0] == "node1 | torch: install torch==2.13.0+cpu | size not known beforehand"
    assert lines[1].startswith("node1 | torch: install torch==2.13.0+cpu | wrote 3.0 MB in ")
    assert len(lines) == 2


def test_a_failed_install_says_so_and_what_it_had_written(tmp_path: Path) -> None:
    transfers, out = logged()
    with pytest.raises(HostError), counting_writes(here(transfers), "torch",
                                                   "install torch", sys.executable,
                                                   (str(tmp_path),)):
        (tmp_path / "part.whl").write_bytes(b"w" * 1000)
        raise HostError("node1", "torch", "could not install torch")
    assert out.getvalue().splitlines()[1].startswith(
        "node1 | torch: install torch | failed after 1.0 kB in ")


def test_a_node_that_prints_anything_but_digits_moves_nothing(tmp_path: Path) -> None:
    fake = tmp_path / "python"  # says the token, then what a hostile node might
    fake.write_text('#!/bin/sh\necho "$4" >&2\nprintf "12abc\\n\\033[2J\\n%s\\n700\\n-5\\n'
                    '500\\n" 99999999999999999999999\ncat >/dev/null\n')
    fake.chmod(0o755)
    transfers, out = logged()
    with counting_writes(here(transfers), "torch", "install torch", str(fake), ()):
        pass
    assert "| wrote 700 bytes in " in out.getvalue().splitlines()[1]


def test_a_count_that_cannot_run_leaves_the_install_alone(tmp_path: Path) -> None:
    transfers, out = logged()
    with counting_writes(here(transfers), "torch", "install torch",
                         str(tmp_path / "no-python"), (str(tmp_path),)):
        (tmp_path / "torch.so").write_bytes(b"t")
    assert out.getvalue() == ""  # nothing started, nothing to end


def test_without_a_display_nothing_runs_on_the_node(tmp_path: Path) -> None:
    class Refuses(HereSession):
        def converse(self, *args: Any, **kwargs: Any) -> None:
            raise AssertionError("nothing shows a count")

    with counting_writes(cast(Session, Refuses(None)), "torch", "install torch",
                         sys.executable, ()):
        pass
