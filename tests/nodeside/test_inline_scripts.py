"""The scripts nodeprov sends to the nodes as strings of its own modules (probes, the batch, the
locks, the install) keep nodeside/'s rule (tests/nodeside/test_nodeside.py): shell passes
``sh -n`` and shellcheck as POSIX sh, Python parses as the oldest node python and imports only
its standard library.

``SCRIPTS`` holds each script whole, as a node runs it: a fragment (``reader.READER``,
``installer.UV_PROBE``, nodeside/uv_runs.sh) is checked inside the scripts that embed it.
Nothing escapes the list: every string a module passes after ``-c`` and every multi-line string
it assigns at the top is found in the source (AST) and must be part of a checked script, a file
of nodeside/, or named in ``NOT_SCRIPTS`` or ``FROM_ELSEWHERE`` with the reason.
"""

from __future__ import annotations

import ast
import importlib
import shutil
import subprocess
from collections.abc import Callable, Iterator

import pytest

from nodeprov.checks import fresh
from nodeprov.remote import actions, batch, facts, nodelock, reader, sudo
from nodeprov.remote.actions import Probe, Run, Write
from nodeprov.tasks import firewall, torch, venv
from nodeprov.wheels import installer, pipconfig, staged
from nodeprov.wheels.installer import Origin
from tests.nodeside.test_nodeside import problems
from tests.sources import package_modules

PROBES = [Probe(("sh", "-c", script, "nodeprov-x", "/opt/venv"))
          for script in (venv._PROBE, torch._PROBE, firewall._READ_ALL)]
READ = facts.read_script([reader.read_many_probe("/etc/hosts"), None, *PROBES])
INSTALL = installer.install("/opt/venv", ["torch"], Origin(["--index-url", "https://mirror/simple"]))
SEED = installer.create_venv("/usr/bin/python3", "/opt/venv", with_uv=True)

# name: (language, the script whole). "python+torch" runs in the venv nodeprov made, with torch;
# "sh+read": a script holding a read, whose first line sets the CUDA probe's Python, quoted
# by shlex.quote to stay literal: shellcheck's SC2016 ("expressions don't expand in single
# quotes") is what is meant there
SCRIPTS: dict[str, tuple[str, Callable[[], str]]] = {
    "remote.facts.read_script (facts.sh and every task's probe)": ("sh+read", lambda: READ),
    "remote.nodelock.holder_argv (the run lock, then the read)": (
        "sh+read", lambda: nodelock.holder_argv(READ, "f00d", 1, 1)[2]),
    "remote.nodelock.under_batch_lock": ("sh", lambda: nodelock.under_batch_lock(["true"])[2]),
    "remote.batch.batch_script (a Run, a Write, then a read)": (
        "sh+read", lambda: batch.batch_script([Run(("true",)), Write("/etc/motd", "hi\n")],
                                              PROBES, lambda write: "/tmp/staged")),
    "remote.reader.read_many_probe": ("sh", lambda: reader.read_many_probe("/etc/hosts").argv[2]),
    "tasks.venv.probe": ("sh", lambda: venv._PROBE),
    "tasks.torch.probe": ("sh", lambda: torch._PROBE),
    "tasks.firewall.probe": ("sh", lambda: firewall._READ_ALL),
    "tasks.torch.VERIFY": ("python+torch", lambda: torch.VERIFY),
    "wheels.installer.install": ("sh", lambda: INSTALL.argv[2]),
    "wheels.installer.create_venv (uv's seed)": ("sh", lambda: SEED[-1].argv[2]),
    "wheels.installer seed's python": ("python", lambda: SEED[-1].argv[-1]),
    "wheels.installer uv unpacked": ("python", lambda: installer._UNPACK),
    "wheels.installer.MAKE_UPLOAD_DIR": ("sh", lambda: installer.MAKE_UPLOAD_DIR),
    "wheels.installer.MAKE_ROOT_DIR": ("sh", lambda: installer.MAKE_ROOT_DIR),
    "wheels.staged.STAGE (root's checked copy of an upload)": ("python", lambda: staged.STAGE),
    "checks.fresh (a new session's environment)": ("sh", lambda: fresh._SCRIPT),
    "remote.sudo (started under sudo)": ("sh", lambda: sudo._STARTED),
    "remote.actions.STOP_MARKED": ("sh", lambda: actions.STOP_MARKED),
}
# multi-line strings at the top of a module that no node runs
NOT_SCRIPTS = {
    "nodeprov.tasks.hosts.CLOUD_DROPIN_TEXT": "a file's text (cloud-init's drop-in)",
    "nodeprov.testbed.boot.RESOLV_CONF": "a file's text in a test node",
}
# what follows ``-c`` without being a script of this package's own
FROM_ELSEWHERE = {
    "nodeprov.job.nodejob:script": "nodeside/launcher.py",
    "nodeprov.job.nodejob.LOCKHOLDER": "nodeside/lockholder.py",
    "nodeprov.userjob.sync:script": "nodeside/syncnode.py",
    "nodeprov.proof.connectivity:script": "nodeside/netcheck.py",
    "nodeprov.wheels.written.SCRIPT": "nodeside/written.py",
    "nodeprov.remote.session:script": "read_script and batch_script, checked above",
    "nodeprov.remote.nodelock:read_script": "read_script, checked above",
    "nodeprov.checks.cluster:command": "a testinfra module's command, run by its own check",
    "os.devnull": "pytest's -c (an empty configuration file), no script",
}


def text_of(name: str) -> str:
    return SCRIPTS[name][1]()


def shell_problems(name: str, script: str, *exclude: str) -> list[str]:
    """What ``sh -n`` and shellcheck (POSIX sh) say of ``script``, or []."""
    assert shutil.which("shellcheck"), "shellcheck is missing: run scripts/setup.sh"
    found = []
    lint = ["shellcheck", "--shell=sh", *(f"--exclude={code}" for code in exclude), "-"]
    for argv in (["sh", "-n"], lint):
        done = subprocess.run(argv, input=script, capture_output=True, text=True)
        if done.returncode:
            found.append(f"{name}: {argv[0]}: {done.stdout}{done.stderr}")
    return found


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_each_script_passes_the_node_side_checks(name: str) -> None:
    language, _ = SCRIPTS[name]
    script = text_of(name)
    if language.startswith("sh"):
        found = shell_problems(name, script, *(["SC2016"] if language == "sh+read" else []))
    else:
        found = [line for line in problems(name, script)
                 if not (language == "python+torch" and line.endswith(
                     "imports torch, not in Python 3.8's standard library"))]
    assert not found, "\n".join(found)


def test_the_checks_catch_a_broken_script() -> None:
    parse, _ = shell_problems("bad", "if true; then\n")
    assert parse.startswith("bad: sh:")
    (lint,) = shell_problems("lint", 'echo $1\n')
    assert lint.startswith("lint: shellcheck:") and "SC2086" in lint
    assert shell_problems("read", "echo '$HOME'\n", "SC2016") == []
    assert "SC2016" in shell_problems("read", "echo '$HOME'\n")[0]


def resolve(module: str, node: ast.expr, tops: set[str], imports: dict[str, str]
            ) -> Iterator[str]:
    """Dotted names of what ``node`` is made of: ``module.NAME`` for a constant of the module,
    its source for an imported one, ``module:name`` for a local variable."""
    bases = {id(part.value) for part in ast.walk(node) if isinstance(part, ast.Attribute)}
    for part in ast.walk(node):
        if isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name):
            base = imports.get(part.value.id, part.value.id)
            yield f"{base}.{part.attr}"
        elif (isinstance(part, ast.Name) and isinstance(part.ctx, ast.Load)
              and id(part) not in bases):
            if part.id in tops:
                yield f"{module}.{part.id}"
            else:
                yield imports.get(part.id, f"{module}:{part.id}")


def sent_strings() -> Iterator[str]:
    """Every string the package passes after ``-c`` or assigns, over lines, at a module's top
    (nodeside/ aside: its own test checks it)."""
    for module in package_modules():
        if module.name.startswith("nodeprov.nodeside"):
            continue
        imports = {alias.asname or alias.name: f"{node.module}.{alias.name}"
                   for node in ast.walk(module.tree) if isinstance(node, ast.ImportFrom)
                   for alias in node.names}
        tops: set[str] = set()
        for node in module.tree.body:
            if isinstance(node, ast.Assign):
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                tops.update(names)
                strings = [c.value for c in ast.walk(node.value)
                           if isinstance(c, ast.Constant) and isinstance(c.value, str)]
                if not isinstance(node.value, ast.Call) and any(
                        "\n" in text.strip() for text in strings):
                    yield from (f"{module.name}.{name}" for name in names)
        for sequence in ast.walk(module.tree):
            if isinstance(sequence, (ast.Tuple, ast.List)):
                items = sequence.elts
                for index, item in enumerate(items[:-1]):
                    if isinstance(item, ast.Constant) and item.value == "-c":
                        yield from resolve(module.name, items[index + 1], tops, imports)


def value_of(name: str) -> object:
    module, _, attribute = name.rpartition(".")
    return getattr(importlib.import_module(module), attribute)


def test_every_string_sent_to_run_is_a_checked_script_or_named_here() -> None:
    checked = [text_of(name) for name in SCRIPTS]
    unchecked = []
    for name in sorted(set(sent_strings())):
        if name in NOT_SCRIPTS or name in FROM_ELSEWHERE or name.startswith(
                "nodeprov.nodeside."):
            continue
        value = value_of(name) if "." in name and ":" not in name else None
        if callable(value):  # read_script(...) and the like: their results are checked above
            continue
        if not (isinstance(value, str) and any(value in script for script in checked)):
            unchecked.append(name)
    assert not unchecked, unchecked


def test_the_scan_finds_the_install_script_and_its_fragments() -> None:
    found = set(sent_strings())
    assert {"nodeprov.wheels.installer._INSTALL", "nodeprov.wheels.installer._SEED",
            "nodeprov.remote.reader.READER", "nodeprov.job.nodejob:script",
            "nodeprov.wheels.installer.MAKE_UPLOAD_DIR"} <= found
    assert pipconfig.SHELL in torch._PROBE  # a fragment, checked where it runs
