"""``venv``: a Python venv built with the node's python3, for torch and the verification job.

    - name: Python venv
      venv: {path: "{{ venv_path }}", python_version: "{{ python_version }}",
             subnet: "{{ node_subnet }}", index_url: "{{ pip_index_url }}", ...}

``python_version`` is a minimum. An existing venv is kept while its python is new enough and
still runs (rebuilding it would drop what is installed); a broken or too old one is rebuilt.
It is built with the node's python3, or, where that is too old (RHEL 9's 3.9, RHEL 8's 3.6),
with the oldest ``python3.X`` beside it that is new enough (the one most torch releases have
wheels for).
On apt nodes whose python3 lacks ensurepip, the ``python3.X-venv`` package is installed first.
pip is put in by uv where the node has uv or can get it (``installer.uv_copy``: downloaded once
by this machine from the ``pip_*`` sources, else its own pip configuration, and fanned out over
``subnet``); by ensurepip where uv cannot be had, and the plan or the task's warning says why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

from nodeprov.remote import reader
from nodeprov.remote.facts import Facts
from nodeprov.tasks.base import Action, Change, Context, Plan, Probe, Run, TaskFailed, TaskType
from nodeprov.util import validate
from nodeprov.wheels import installer
from nodeprov.wheels.installer import UvState, create_venv, parse_uv_line, uv_for
from nodeprov.wheels.peers import Distribution, plan_copy
from nodeprov.wheels.sources import Sources

# argv: the venv, then nodeprov_read's for its pyvenv.cfg. Prints a line each: whether uv is
# there (installer.UV_PROBE), the version its python says when run (nothing where it does not
# run: a link left dangling by a distribution upgrade; a python3 link that now starts another
# minor version, whose packages live in another folder), "yes" when the folder holds anything,
# the lib folders that have ensurepip, the first of the venv and its folders that is not root's
# or that others may write (path, uid, mode); then pyvenv.cfg. Shell builtins, a `stat` per
# folder there, the one `head` of nodeprov_read, and the venv's python once (-I -S: 7.6 ms a
# start, measured on the test machine), since only running it shows that it runs.
_PROBE = reader.READER + installer.UV_PROBE + r"""venv=$1; shift
ran=$("$venv/bin/python" -I -S -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' \
  2>/dev/null) || ran=
case $ran in *[!0-9.]*) ran= ;; esac
printf '%s\n' "$ran"
occupied=
for entry in "$venv"/* "$venv"/.[!.]* "$venv"/..?*; do
  if [ -e "$entry" ] || [ -L "$entry" ]; then occupied=yes; break; fi
done
echo "$occupied"
for dir in /usr/lib/python3*/ensurepip /usr/local/lib/python3*/ensurepip; do
  case $dir in *'
'*) ;; *) [ ! -e "$dir/__init__.py" ] || printf '%s ' "$dir" ;; esac
done
echo
dir=$venv unsafe=
while [ -n "$dir" ] && [ -z "$unsafe" ]; do
  if [ -e "$dir" ]; then
    found=$(stat -L -c '%u %a' -- "$dir") || found="? ?"
    case $found in "0 "*[2367]) unsafe="$dir $found" ;; "0 "*) ;; *) unsafe="$dir $found" ;; esac
  fi
  dir=${dir%/*}
done
echo "$unsafe"
nodeprov_read "$@"
"""


# the oldest python3 that runs nodeprov's own node-side scripts (netcheck, peer_scripts, syncnode)
SCRIPTS_PYTHON = "3.8"


@dataclass(frozen=True)
class VenvParams:
    path: str = "/opt/nodeprov/venv"
    python_version: str = "3.10"
    # where this machine downloads uv from, and the subnet it is fanned out over
    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    subnet: str | None = None

    def __post_init__(self) -> None:
        validate.absolute_path(self.path)
        validate.version(self.python_version)
        if self.path == "/":
            raise ValueError("path: a venv cannot be /")
        for source in (*self.extra_index_urls, *self.find_links, *filter(None, [self.index_url])):
            validate.option_safe(source)
        if self.subnet is not None:
            validate.cidr(self.subnet)

    @property
    def sources(self) -> Sources:
        return Sources(self.index_url, self.extra_index_urls, self.find_links)


@dataclass(frozen=True)
class VenvState:
    """What the probe saw: the venv's python version (pyvenv.cfg's; None: no venv), the version
    its python says when run (None: it does not run), whether the folder holds anything, and
    the lib folders that have ensurepip."""

    version: str | None
    running: str | None
    occupied: bool
    ensurepip: tuple[str, ...]
    uv: UvState = UvState(False)
    unsafe: str = ""  # "PATH UID MODE": a folder another user may change (issue #34)


def probe(params: VenvParams) -> Probe:
    return Probe(("sh", "-c", _PROBE, "nodeprov-venv", params.path,
                  *reader.read_args(f"{params.path}/pyvenv.cfg")))


def parse_probe(observed: str) -> VenvState:
    uv, ran, occupied, ensurepip, unsafe, cfg = (observed.split("\n", 5) + [""] * 5)[:6]
    return VenvState(
        version=parse_pyvenv_cfg(next(iter(reader.observed_files(cfg).values()), None) or ""),
        running=ran if re.fullmatch(r"\d+\.\d+\.\d+", ran) else None,
        occupied=occupied == "yes",
        ensurepip=tuple(ensurepip.split()),
        uv=parse_uv_line(uv),
        unsafe=unsafe,
    )


def parse_pyvenv_cfg(text: str) -> str | None:
    """The python version a venv was built with (``version``, or ``version_info`` on 3.11+).

    >>> parse_pyvenv_cfg("home = /usr/bin\\nversion = 3.11.2\\n")
    '3.11.2'
    """
    values = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            values[key.strip()] = value.strip()
    return values.get("version") or values.get("version_info")


def version_tuple(version: str) -> tuple[int, ...]:
    """Numeric parts up to the first suffix: ``"3.12.0rc1"`` -> (3, 12, 0)."""
    parts = []
    for part in version.split("."):
        match = re.match(r"\d+", part)
        if match is None:
            break
        parts.append(int(match.group()))
        if match.end() < len(part):
            break
    return tuple(parts)


def at_least(version: str, minimum: str) -> bool:
    """Whether ``version`` is at least ``minimum``, compared on the minimum's parts."""
    wanted = version_tuple(minimum)
    return version_tuple(version)[: len(wanted)] >= wanted


def plan(ctx: Context, params: VenvParams, observed: str) -> Plan:
    state = parse_probe(observed)
    path, minimum = params.path, params.python_version
    if state.unsafe:
        folder, uid, mode = state.unsafe.rsplit(" ", 2)
        raise TaskFailed(f"{folder} (uid {uid}, mode {mode}) is not root's alone: another user "
                         f"could replace the venv {path} or its CA bundle, which root runs; "
                         "choose a venv_path whose folders only root can change (the default "
                         "/opt/nodeprov/venv)")
    built, running = state.version, state.running
    # a python3 link a distribution upgrade moved on: the venv's packages are in built's folder
    moved = built is not None and running is not None and _minor(running) != _minor(built)
    if built is not None and running is not None and not moved and at_least(built, minimum):
        return Plan.noop(f"venv {path} already runs python {running} (>= {minimum})")
    why = (f"rebuild venv {path}: its python now runs {running}, not the {built} it was built "
           f"with, whose packages it no longer sees" if moved else
           f"rebuild venv {path}: its python {built} is older than {minimum}"
           if built is not None and running is not None else
           f"rebuild venv {path}: its python ({state.version}) no longer runs"
           if state.version is not None else f"create venv {path}")
    if state.version is None and state.occupied:
        raise TaskFailed(f"{path} exists and is not a venv (no pyvenv.cfg); move it away or "
                         "choose another venv_path")
    python, version = node_python(ctx.facts, minimum)
    actions: list[Action] = []
    package = _venv_package(ctx.facts, python, version, state.ensurepip)
    if package:
        actions.append(Run(("env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install",
                            "-y", "--no-install-recommends", package)))
        why += f" (installing {package} for ensurepip)"
    if state.version is not None:
        actions.append(Run(("rm", "-rf", "--", path)))
    distribution = ctx.state(Distribution)
    copy, why_not = uv_for(state.uv, ctx.facts.arch, python, params.sources,
                           distribution.here if distribution else None)
    pip = "pip put in by uv" if why_not is None else f"pip put in by ensurepip ({why_not})"
    if copy is not None:
        copy, words = plan_copy(distribution, ctx.host.name, ctx.facts, params.subnet, copy)
        actions.insert(0, copy)
        pip += f" (uv {installer.UV_VERSION} {words})"
    actions += create_venv(python, path, with_uv=why_not is None)
    return Plan.of(Change(f"{why} with {python} {version}, {pip}", tuple(actions)))


def _minor(version: str) -> str:
    """The minor version: 3.11.2 -> 3.11."""
    return ".".join(version.split(".")[:2])


def node_python(facts: Facts, minimum: str) -> tuple[str, str]:
    """(path, version) of the interpreter the venv is built with: python3, or where it is older
    than ``minimum`` the oldest new-enough python3.X beside it; TaskFailed saying how to get
    one. python3 itself must run nodeprov's node-side scripts (the matrix, peers, sync)."""
    if facts.python_path is None or facts.python_version is None:
        raise TaskFailed(f"the node has no python3; {_python_hint(facts, minimum)}")
    if not at_least(facts.python_version, SCRIPTS_PYTHON):
        raise TaskFailed(f"the node's python3 ({facts.python_path}) is {facts.python_version}; "
                         f"nodeprov's node-side scripts need python3 >= {SCRIPTS_PYTHON}: "
                         f"{_python_hint(facts, minimum)}")
    if at_least(facts.python_version, minimum):
        return facts.python_path, facts.python_version
    # the oldest final release first; a pre-release (3.14.0rc1) only where nothing else fits
    fitting = sorted((not re.fullmatch(r"[\d.]+", version), version_tuple(version), path, version)
                     for path, version in facts.pythons if at_least(version, minimum))
    if fitting:
        *_, path, version = fitting[0]
        return path, version
    found = [f"{path} ({version})" for path, version in
             ((facts.python_path, facts.python_version), *facts.pythons)]
    raise TaskFailed(f"no python >= {minimum} on the node (found: {', '.join(found)}); "
                     f"{_python_hint(facts, minimum)}, or lower python_version in the inventory")


def _python_hint(facts: Facts, minimum: str) -> str:
    """How to get a new-enough python on this node."""
    if facts.package_manager in ("dnf", "yum"):
        return (f"install a python >= {minimum} ({facts.package_manager} install python3.12); "
                f"where python3 itself is older than {SCRIPTS_PYTHON} (RHEL 8), also make it "
                "python3 (alternatives --set python3 /usr/bin/python3.12)")
    if facts.package_manager == "apt-get":
        return (f"install a python >= {minimum} with its venv module (apt-get install python3 "
                "python3-venv, or a newer python3.N and python3.N-venv where the release has one)")
    return f"install a python >= {minimum}"


def _venv_package(facts: Facts, python: str, version: str, ensurepip: tuple[str, ...]
                  ) -> str | None:
    """Debian's python3.X-venv when the system python lacks ensurepip (venv cannot add pip)."""
    if facts.package_manager != "apt-get":
        return None
    if PurePosixPath(python).parent != PurePosixPath("/usr/bin"):
        return None  # not Debian's python: its package would not help
    minor = ".".join(version.split(".")[:2])
    if f"/usr/lib/python{minor}/ensurepip" in ensurepip:
        return None
    return f"python{minor}-venv"


TASK = TaskType("venv", "A Python venv built with the node's python3", VenvParams, probe, plan)
