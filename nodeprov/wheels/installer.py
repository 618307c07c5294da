"""Installs on the nodes at uv's speed: uv pushed once per node, pip where uv cannot run.

    state = parse_uv_line("no-uv glibc 2.36")        # from UV_PROBE, in a task's probe
    why_not = uv_unusable(state, "x86_64")           # None: uv can be had
    actions = (*push_uv(state, "x86_64", "/usr/bin/python3"),
               install(venv, ("--find-links", "/opt/wheels"), ["torch==2.13.0+cpu"]))

This machine downloads uv's wheel for the node's platform once (``python -m
nodeprov.wheels.wheelhouse``, shared by every host and run), pushes it (~18 MB) and the node's
python3 unpacks the static binary to ``UV``, where later runs find it. uv reads no pip.conf: the
sources are always given on its command line (the node's pip configuration, as ``pipconfig``
reads it, included), with pip's index strategy. The venv stays a plain venv with pip in it.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from nodeprov.remote.actions import Action, Local, Run, Upload
from nodeprov.wheels.wheelhouse import cache_root, manylinux_platforms

UV_VERSION = "0.13.9"
UV_DIR = f"/var/cache/nodeprov/uv-{UV_VERSION}"
UV = f"{UV_DIR}/uv"
UV_FAILED = f"{UV_DIR}/failed"  # the first line uv printed where it did not run: pip from then on
_UPLOAD = f"{UV_DIR}.upload"
_ARCHES = ("x86_64", "aarch64")  # the platforms torch ships on; uv has a wheel for each
# One line: "uv-failed" and why (uv did not run here), "uv" when the binary is there, else
# "no-uv" and the glibc version (to fetch uv for).
UV_PROBE = (f"if [ -s {shlex.quote(UV_FAILED)} ]; then IFS= read -r why < "
            f"{shlex.quote(UV_FAILED)}; echo \"uv-failed $why\"; "
            f"elif [ -x {shlex.quote(UV)} ]; then echo uv; "
            "else echo \"no-uv $(getconf GNU_LIBC_VERSION 2>/dev/null)\"; fi\n")
# argv: the upload folder, the binary's path. Unpacks uv from the pushed wheel, atomically.
_UNPACK = r"""import glob, os, shutil, sys, zipfile
upload, dest = sys.argv[1:]
(wheel,) = glob.glob(os.path.join(upload, "uv-*.whl"))
os.makedirs(os.path.dirname(dest), exist_ok=True)
with zipfile.ZipFile(wheel) as archive:
    name = next(n for n in archive.namelist() if n.endswith(".data/scripts/uv"))
    with archive.open(name) as source, open(dest + ".tmp", "wb") as target:
        shutil.copyfileobj(source, target)
os.chmod(dest + ".tmp", 0o755)
os.replace(dest + ".tmp", dest)
shutil.rmtree(upload)
"""
# The SFTP user (the sudo caller under become) must be able to write the upload folder.
# argv: the folder. Emptied first: a failed run's files must not join this run's wheels.
MAKE_UPLOAD_DIR = 'rm -rf -- "$1" && install -d -m 0700 -o "${SUDO_USER:-$(id -un)}" -- "$1"'
PIP: tuple[str, ...] = ("-m", "pip", "install", "--no-input", "--disable-pip-version-check",
                        "--progress-bar", "off", "--no-cache-dir")
# uv_runs UV: true when uv runs; else its first line of error goes to UV_FAILED (the next
# plans read it and say "with pip (uv failed: ...)") and to stderr.
_UV_RUNS = r"""uv_runs() {
  why=$("$1" --version 2>&1 >/dev/null) && return 0
  status=$? why=${why%%
*}
  why=${why:-"$1 --version exited $status"}
  printf '%s\n' "$why" > "$1.failed" && mv -f -- "$1.failed" "${1%/*}/failed" || :
  echo "nodeprov: installed with pip: uv failed: $why" >&2
  return 1
}
"""
# argv: uv, the venv, "reinstall" or "install", uv's cache, then sources, "--", specs. uv when
# it runs (its cache beside the venv, so files are hard-linked, then removed), else pip.
_INSTALL = _UV_RUNS + r"""uv=$1 venv=$2 mode=$3 cache=$4; shift 4
if uv_runs "$uv"; then
  [ "$mode" = install ] || set -- --reinstall --no-deps "$@"
  status=0
  UV_CACHE_DIR=$cache "$uv" pip install --no-config --no-progress --python "$venv/bin/python" \
    --index-strategy unsafe-best-match "$@" || status=$?
  rm -rf -- "$cache"
  exit "$status"
fi
[ "$mode" = install ] || set -- --force-reinstall --no-deps "$@"
exec "$venv/bin/python" -m pip install --no-input --disable-pip-version-check \
  --progress-bar off --no-cache-dir "$@"
"""
# argv: uv, the venv. pip into a venv made --without-pip, from the wheel ensurepip would use
# (Debian: /usr/share/python-wheels), by uv: ~0.3 s where ensurepip takes ~3 s.
_FIND_PIP_WHEEL = r"""import glob, os, sysconfig, ensurepip
dirs = [sysconfig.get_config_var("WHEEL_PKG_DIR") or "", "/usr/share/python-wheels",
        os.path.join(os.path.dirname(ensurepip.__file__), "_bundled")]
print(next((d for d in dirs if d and glob.glob(os.path.join(d, "pip-*.whl"))), ""))
"""
_SEED = _UV_RUNS + r"""uv=$1 venv=$2
wheels=$("$venv/bin/python" -c "$3") || wheels=
if [ -n "$wheels" ] && uv_runs "$uv"; then
  exec "$uv" pip install --no-config --no-progress --no-cache --python "$venv/bin/python" \
    --no-index --find-links "$wheels" pip
fi
exec "$venv/bin/python" -m ensurepip --default-pip
"""


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
        return UvState(False, None, line.removeprefix("uv-failed ").strip() or "no reason given")
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


def push_uv(state: UvState, arch: str, python: str) -> tuple[Action, ...]:
    """Download uv for the node's platform here (once), push it, unpack it with ``python``;
    nothing when the node has it (or cannot have it: ``uv_unusable``)."""
    if state.present or state.glibc is None or uv_unusable(state, arch):
        return ()
    platforms = [arg for tag in manylinux_platforms(state.glibc, arch)
                 for arg in ("--platform", tag)]
    local = cache_root().parent / "uv" / f"uv-{UV_VERSION}-{arch}-glibc{state.glibc[0]}." \
                                         f"{state.glibc[1]}"
    return (Local((sys.executable, "-m", "nodeprov.wheels.wheelhouse", str(local), "download",
                   "--no-deps", "--only-binary=:all:", *platforms, "--no-input",
                   "--progress-bar", "off", "--", f"uv=={UV_VERSION}")),
            Run(("sh", "-c", MAKE_UPLOAD_DIR, "nodeprov-mkdir", _UPLOAD)),
            Upload(str(local), _UPLOAD),
            Run((python, "-c", _UNPACK, _UPLOAD, UV)))


def install(venv: str, sources: Sequence[str], specs: Sequence[str], *, reinstall: bool = False,
            hint: str = "") -> Run:
    """Install ``specs`` into ``venv`` from ``sources`` (pip's options) with uv (pip if uv does
    not run); ``reinstall`` replaces them without their dependencies."""
    return Run(("sh", "-c", _INSTALL, "nodeprov-install", UV, venv,
                "reinstall" if reinstall else "install", f"{venv}.uv-cache", *sources, "--",
                *specs),
               hint=hint)


def pip_install(venv: str, sources: Sequence[str], specs: Sequence[str], *,
                reinstall: bool = False, hint: str = "") -> Run:
    """The same with pip, where uv cannot be had."""
    again = ("--force-reinstall", "--no-deps") if reinstall else ()
    return Run((f"{venv}/bin/python", *PIP, *again, *sources, "--", *specs), hint=hint)


def create_venv(python: str, venv: str, with_uv: bool) -> tuple[Run, ...]:
    """A plain venv with pip: pip put in by uv, or by ``python -m venv`` where uv cannot be had."""
    if not with_uv:
        return (Run((python, "-m", "venv", "--", venv)),)
    return (Run((python, "-m", "venv", "--without-pip", "--", venv)),
            Run(("sh", "-c", _SEED, "nodeprov-seed", UV, venv, _FIND_PIP_WHEEL)))
