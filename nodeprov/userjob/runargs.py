"""What ``nodeprov run`` was asked to do, checked before any connection.

    request = parse_request(["train.py", "--lr", "3e-4"], nproc="auto", chdir=None,
                            sync="/home/me/train", env=["OMP_NUM_THREADS=4"], timeout=3600,
                            preflight=True)
    request.workdir      # /home/me/train: --chdir, else the synced directory, else home ('')

Everything after ``--`` on the command line is the job's (``cli.options.AfterDashDash``), so
neither an option of the script nor its name is ever taken for nodeprov's. Each bad value raises
InputError naming the option and what would be valid (exit 2). The script and its arguments
stay an argv list: they reach torchrun as arguments, never through a shell.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from nodeprov.errors import InputError
from nodeprov.util import validate

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# nodeprov sets these for every run: the stop step finds the job by the first, the logs tell
# ranks apart by the second.
RESERVED_ENV = ("NODEPROV_JOB_RUN", "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE")


@dataclass(frozen=True)
class RunRequest:
    """The user's job: ``command`` is SCRIPT and its arguments; ``nproc`` None means one process
    per GPU (one on a CPU node); ``timeout`` 0 means no deadline."""

    command: tuple[str, ...]
    nproc: int | None = None
    chdir: str | None = None
    sync: Path | None = None
    env: tuple[tuple[str, str], ...] = ()
    timeout: int = 0
    preflight: bool = True

    @property
    def workdir(self) -> str:
        """Where the script starts on every node: '' is the login's home directory."""
        return self.chdir or (str(self.sync) if self.sync else "")


def parse_env(pairs: Sequence[str], environ: Mapping[str, str] = os.environ
              ) -> tuple[tuple[str, str], ...]:
    """``KEY=VALUE`` options as pairs, or ``KEY`` alone for its value in this machine's
    ``environ`` (a secret then appears on no command line here either); a name must be a shell
    variable name, a value one line. Messages never quote a value.

    >>> parse_env(["OMP_NUM_THREADS=4", "NOTE=a b=c", "TOKEN"], {"TOKEN": "s3cret"})
    (('OMP_NUM_THREADS', '4'), ('NOTE', 'a b=c'), ('TOKEN', 's3cret'))
    """
    parsed = []
    for pair in pairs:
        name, equals, value = pair.partition("=")
        if not ENV_NAME.fullmatch(name):
            raise InputError(f"{name!r} is not a variable name (letters, digits, '_', not "
                             "starting with a digit): give KEY=VALUE, e.g. OMP_NUM_THREADS=4, "
                             "or KEY for its value here", field="--env")
        if not equals and name not in environ:
            raise InputError(f"{name} is not set on this machine: give {name}=VALUE, or export "
                             f"{name} first", field="--env")
        if name in RESERVED_ENV:
            raise InputError(f"{name} is set by nodeprov itself; choose another variable",
                             field="--env")
        value = value if equals else environ[name]
        try:
            validate.text_value(value)
        except ValueError:
            raise InputError(f"{name}: its value holds a newline or control character: give "
                             "one line", field="--env") from None
        parsed.append((name, value))
    return tuple(parsed)


def parse_nproc(text: str) -> int | None:
    """``auto`` (None: the node's GPU count, 1 on a CPU node) or a positive count."""
    if text == "auto":
        return None
    if text.isdigit() and 1 <= int(text) <= 1024:
        return int(text)
    raise InputError(f"{text!r} is not a process count: give auto or a number from 1 to 1024",
                     field="--nproc-per-node")


def parse_request(command: Sequence[str], *, nproc: str, chdir: str | None, sync: str | None,
                  env: Sequence[str], timeout: int, preflight: bool) -> RunRequest:
    """The checked request, or InputError for the first bad value."""
    if not command:
        raise InputError("no script: give it after --, as in nodeprov run inventory.yaml -- "
                         "train.py --epochs 3", field="SCRIPT")
    try:
        validate.option_safe(command[0])
        for word in command[1:]:
            if "\0" in word:
                raise ValueError(f"{word!r} contains a NUL byte")
    except ValueError as error:
        raise InputError(str(error), field="SCRIPT") from None
    if chdir is not None:
        try:
            chdir = validate.absolute_path(chdir)
        except ValueError as error:
            raise InputError(f"{error}: give the directory on the nodes as an absolute path",
                             field="--chdir") from None
    synced = None
    if sync is not None:
        synced = Path(sync).expanduser().absolute()
        if not synced.is_dir():
            raise InputError(f"{sync!r} is not a directory on this machine", field="--sync")
        try:
            validate.absolute_path(str(synced))
        except ValueError as error:
            raise InputError(str(error), field="--sync") from None
    if timeout < 0:
        raise InputError(f"{timeout} is negative: give seconds, or 0 for no deadline",
                         field="--timeout")
    return RunRequest(tuple(command), parse_nproc(nproc), chdir, synced, parse_env(env),
                      timeout, preflight)
