"""Installs on the nodes at uv's speed, and with pip whenever uv cannot be had or fails.

    state = parse_uv_line("no-uv glibc 2.36")        # from UV_PROBE, in a task's probe
    why_not = uv_unusable(state, "x86_64")           # None: uv can be had
    copy = uv_copy(state, "x86_64", "/usr/bin/python3", sources)   # a PeerUpload, or None
    step = install(venv, ["torch==2.13.0+cpu"], Origin(("--find-links", "/opt/wheels")))

uv travels like the wheels: this machine downloads uv's wheel for the node's platform once
(from the inventory's sources, else its own pip configuration: ``thismachine``), the first node
gets it and the others fetch it from the nodes that have it (``peers``), and the node's python3
unpacks the static binary to ``UV``, where later runs find it. Each step may fail without failing
the task (the copy is ``optional``): the install script then runs pip, as it does where uv does
not run (``UV_FAILED`` says why, and the plans say so) or where uv fails an install pip then
completes. uv reads no pip.conf: the sources are always given on its command line (the node's
pip configuration, as ``pipconfig`` reads it, included), with pip's index strategy. uv trusts
the certificates pip does: where pip is configured with a CA bundle, pip adds it to the node's
system store and its own roots (certifi), while uv's ``--cert`` replaces uv's roots, so uv is
given one bundle of the three; else the node's system store (``--system-certs``), where a
site's own CA is installed and which pip reads (uv's own roots are Mozilla's alone: a site
mirror's certificate failed there, and pip installed). The venv stays a plain venv with pip in
it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

from nodeprov.remote.actions import Run
from nodeprov.util.redact import mask_urls
from nodeprov.wheels.peers import PeerUpload
from nodeprov.wheels.sources import Sources
from nodeprov.wheels.staged import root_copy
from nodeprov.wheels.thismachine import ThisMachine, WheelSet
from nodeprov.wheels.wheelhouse import cache_root, manylinux_platforms

UV_VERSION = "0.13.9"
UV_DIR = f"/var/cache/nodeprov/uv-{UV_VERSION}"
UV = f"{UV_DIR}/uv"
UV_FAILED = f"{UV_DIR}/failed"  # the first line uv printed where it did not run: pip from then on
_UPLOAD = f"{UV_DIR}.upload"
WITHOUT_UV = f"uv {UV_VERSION} could not be had, so pip installs here"
_ARCHES = ("x86_64", "aarch64")  # the platforms torch ships on; uv has a wheel for each
# One line: "uv-failed" and why (uv did not run here), "uv" when the binary is there, else
# "no-uv" and the glibc version (to fetch uv for).
UV_PROBE = (f"if [ -s {shlex.quote(UV_FAILED)} ]; then IFS= read -r why < "
            f"{shlex.quote(UV_FAILED)}; echo \"uv-failed $why\"; "
            f"elif [ -x {shlex.quote(UV)} ]; then echo uv; "
            "else echo \"no-uv $(getconf GNU_LIBC_VERSION 2>/dev/null)\"; fi\n")
_STAGED = root_copy(_UPLOAD)  # root's checked copy of the upload, which it unpacks
# argv: root's copy of the upload, the binary's path, the upload folder. Unpacks uv from the
# sent wheel, atomically, then removes both folders.
_UNPACK = r"""import glob, os, shutil, sys, zipfile
staged, dest, upload = sys.argv[1:]
(wheel,) = glob.glob(os.path.join(staged, "uv-*.whl"))
os.makedirs(os.path.dirname(dest), exist_ok=True)
with zipfile.ZipFile(wheel) as archive:
    name = next(n for n in archive.namelist() if n.endswith(".data/scripts/uv"))
    with archive.open(name) as source, open(dest + ".tmp", "wb") as target:
        shutil.copyfileobj(source, target)
os.chmod(dest + ".tmp", 0o755)
os.replace(dest + ".tmp", dest)
shutil.rmtree(staged)
shutil.rmtree(upload)
"""
# The SFTP user (the sudo caller under become) must be able to write the upload folder.
# argv: the folder. Emptied first: a failed run's files must not join this run's wheels.
MAKE_UPLOAD_DIR = 'rm -rf -- "$1" && install -d -m 0700 -o "${SUDO_USER:-$(id -un)}" -- "$1"'
# A folder only root (the user running, without become) writes: where a node downloads or
# fetches the wheels itself, nothing travels by SFTP, so the login user need not write there.
MAKE_ROOT_DIR = 'rm -rf -- "$1" && install -d -m 0700 -- "$1"'
# the node-side scripts of an install (nodeside/): uv_runs.sh's functions come first in each
_UV_RUNS = resources.files("nodeprov.nodeside").joinpath("uv_runs.sh").read_text()
# the system's CA bundle, where update-ca-certificates (update-ca-trust, ...) writes it: uv
# reads the system store only where one is there (else its own roots serve public indexes)
SYSTEM_STORES = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",
                 "/etc/ssl/ca-bundle.pem", "/etc/ssl/cert.pem")
UV_CACHE, PIP_TMP = ".uv-cache", ".pip-tmp"  # beside the venv: its filesystem, not /tmp's
UV_CERTS = ".uv-certs.pem"  # beside the venv: the bundle uv trusts where pip has a cert
# the line _INSTALL prints where uv failed and pip tries next
_TRYING_PIP = re.compile(r"^nodeprov: uv failed \(.*\): trying pip$", re.MULTILINE)
# an install (nodeside/install.sh: its argv, and the system stores of SYSTEM_STORES). pip
# downloads into its own temporary folder beside the venv (PIP_TMP, removed after): a small
# /tmp cannot fail a 3 GB wheel, and the bytes it writes can be counted there (wheels.written).
_INSTALL = _UV_RUNS + resources.files("nodeprov.nodeside").joinpath("install.sh").read_text()
# the folder of the pip wheel ensurepip would use (Debian: /usr/share/python-wheels), for
# nodeside/seed.sh, which installs pip from it by uv
_FIND_PIP_WHEEL = r"""import glob, os, sysconfig, ensurepip
dirs = [sysconfig.get_config_var("WHEEL_PKG_DIR") or "", "/usr/share/python-wheels",
        os.path.join(os.path.dirname(ensurepip.__file__), "_bundled")]
print(next((d for d in dirs if d and glob.glob(os.path.join(d, "pip-*.whl"))), ""))
"""
_SEED = _UV_RUNS + resources.files("nodeprov.nodeside").joinpath("seed.sh").read_text()


@dataclass(frozen=True)
class UvState:
    """What ``UV_PROBE`` saw: uv on the node, else the node's glibc (None: not glibc);
    ``failed``: the first line uv printed where it did not run (then pip installs)."""

    present: bool
    glibc: tuple[int, int] | None = None
    failed: str = ""


def parse_uv_line(line: str) -> UvState:
    """The line of ``UV_PROBE``.

    >>> parse_uv_line("no-uv glibc 2.36")
    UvState(present=False, glibc=(2, 36), failed='')
    """
    if line.strip() == "uv":
        return UvState(True)
    if line.startswith("uv-failed "):
        # uv's own words, shown in plans and reports: an index's password never
        why = mask_urls(line.removeprefix("uv-failed ").strip())
        return UvState(False, None, why or "no reason given")
    major, _, minor = (line.split()[-1] if len(line.split()) > 1 else "").partition(".")
    return UvState(False, (int(major), int(minor)) if major.isdigit() and minor.isdigit()
                   else None)


def uv_unusable(state: UvState, arch: str) -> str | None:
    """Why uv cannot be had on this node (then pip installs), None when it can."""
    if state.failed:
        return f"uv failed: {state.failed}; remove {UV_FAILED} to try uv again"
    if state.present:
        return None
    if arch not in _ARCHES:
        return f"no uv build for {arch}"
    if state.glibc is None:
        return "the node has no glibc ('getconf GNU_LIBC_VERSION' printed nothing)"
    return None


def uv_copy(state: UvState, arch: str, python: str, sources: Sources) -> PeerUpload | None:
    """uv for the node's platform, downloaded here once from ``sources`` (the inventory's),
    sent, unpacked with ``python``; None when the node has it (or cannot have it:
    ``uv_unusable``). Optional: without it, the node installs with pip."""
    if state.present or state.glibc is None or uv_unusable(state, arch):
        return None
    platforms = tuple(arg for tag in manylinux_platforms(state.glibc, arch)
                      for arg in ("--platform", tag))
    local = cache_root().parent / "uv" / f"uv-{UV_VERSION}-{arch}-glibc{state.glibc[0]}." \
                                         f"{state.glibc[1]}"
    return PeerUpload(str(local), _UPLOAD, key=str(local), python=python,
                      fill=WheelSet(("--no-deps", *platforms), (f"uv=={UV_VERSION}",), sources),
                      optional=WITHOUT_UV, staged=_STAGED,
                      then=(python, "-c", _UNPACK, _STAGED, UV, _UPLOAD))


def uv_for(state: UvState, arch: str, python: str, sources: Sources,
           here: ThisMachine | None) -> tuple[PeerUpload | None, str | None]:
    """The uv copy a node needs (None: none), and why pip installs instead (None: uv does):
    ``uv_unusable``, or this machine already failed to download uv in this run."""
    why_not = uv_unusable(state, arch)
    copy = uv_copy(state, arch, python, sources) if why_not is None else None
    failure = here.failure(copy.local_path) if here is not None and copy is not None else None
    if failure:
        return None, f"uv {UV_VERSION} could not be had: this machine could not download it " \
                     f"{failure}"
    return copy, why_not


@dataclass(frozen=True)
class Origin:
    """Where an install comes from: pip's ``sources`` options, or only the folder ``wheels``
    where it exists; ``cert`` is pip's CA bundle (``pipconfig``), which uv is given too. A
    failure is said as the install's from ``source``, and ``hint`` says how to fix it."""

    sources: Sequence[str] = ()
    wheels: str = ""
    cert: str = ""
    source: str = ""
    hint: str = ""


@dataclass(frozen=True)
class Install(Run):
    """An install into ``venv`` (``_INSTALL``), shown as what it installs; its failure is said
    as ``what`` could not be installed from ``source``, and ``hint`` says how to fix it
    (``peer_exec``)."""

    what: str = ""
    source: str = ""
    venv: str = ""

    def __str__(self) -> str:
        return f"install {self.what}"

    @property
    def folders(self) -> tuple[str, str, str]:
        """Where it writes: the venv, and uv's or pip's folder beside it."""
        return self.venv, f"{self.venv}{UV_CACHE}", f"{self.venv}{PIP_TMP}"


def install(venv: str, specs: Sequence[str], origin: Origin = Origin(), *,
            reinstall: bool = False, with_uv: bool = True) -> Install:
    """Install ``specs`` into ``venv`` from ``origin``, with uv (pip if uv does not run or
    fails; pip only without ``with_uv``); ``reinstall`` replaces them without their
    dependencies. uv verifies HTTPS as pip does: with the origin's ``cert``, the system store
    and pip's own roots together, else with the system store."""
    more = f" and {len(specs) - 1} more" if len(specs) > 1 else ""
    return Install(("sh", "-c", _INSTALL, "nodeprov-install", UV if with_uv else "", venv,
                    "reinstall" if reinstall else "install", f"{venv}{UV_CACHE}", origin.wheels,
                    origin.cert, f"{venv}{UV_CERTS}", *origin.sources, "--", *specs),
                   hint=origin.hint, what=f"{specs[0]}{more}" if specs else "",
                   source=origin.source, venv=venv)


def last_output(output: str) -> str:
    """The output of the installer that ran last in an ``Install``: pip's where uv failed
    first (uv's own refusal is not why pip failed).

    >>> last_output("error: uv\\nnodeprov: uv failed (error: uv): trying pip\\nERROR: pip\\n")
    '\\nERROR: pip\\n'
    """
    return _TRYING_PIP.split(output)[-1]


def create_venv(python: str, venv: str, with_uv: bool) -> tuple[Run, ...]:
    """A plain venv with pip: pip put in by uv (by ensurepip where uv is not there after all),
    or by ``python -m venv`` where uv cannot be had."""
    if not with_uv:
        return (Run((python, "-m", "venv", "--", venv)),)
    return (Run((python, "-m", "venv", "--without-pip", "--", venv)),
            Run(("sh", "-c", _SEED, "nodeprov-seed", UV, venv, _FIND_PIP_WHEEL)))
