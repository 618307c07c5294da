"""How the torch task installs: its sources, the wheelhouse, and uv or pip on the node.

    sources, where = sources_for(params, state, variant)
    wanted = Wanted(variant, python, (spec, *missing), force, sources, where)
    actions, wheels_from, with_what = install_actions(ctx, params, state, wanted)

Sources: the inventory's ``pip_*`` variables, else the node's own pip configuration
(``pipconfig``), else PyTorch's index of the variant with PyPI. In wheelhouse mode this machine
downloads the wheels once (from the ``pip_*`` sources, else its own pip configuration) and sends
them to one node, which the others fetch them from over the node subnet (``wheels.peers``;
``wheels_from`` says which); the node installs from that copy only, or, when this machine
could not fill the wheelhouse, from its own sources (a warning says so). With
``download_once`` this machine resolves the wheels (each file's sha256 from the index), the
first node downloads exactly those itself and the others fetch its copy, checked against this
machine's hashes. uv comes the same way as the wheels (``installer.uv_copy``); the install uses
pip wherever uv cannot be had.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from nodeprov.tasks.base import Action, Context, Run, TaskFailed
from nodeprov.variants.choose import wheel_spec
from nodeprov.wheels import installer, pipconfig, wheelhouse
from nodeprov.wheels.peers import (
    Distribution,
    PeerDownload,
    PeerUpload,
    plan_copy,
    plan_download,
)
from nodeprov.wheels.sources import Sources
from nodeprov.wheels.staged import root_copy
from nodeprov.wheels.thismachine import WheelSet
from nodeprov.wheels.wheelhouse import platform_args, target_name

if TYPE_CHECKING:
    from nodeprov.tasks.torch.params import TorchParams, TorchState

REMOTE_WHEELHOUSE = "/var/cache/nodeprov/wheelhouse"
FIX_NODE = "set pip_index_url or pip_find_links to an index it reaches, or wheelhouse: true"
FIX_HERE = "set pip_index_url or pip_find_links to a mirror this machine reaches"


@dataclass(frozen=True)
class Wanted:
    """What the plan decided: ``specs`` (torch's first) for ``variant`` and the venv's
    ``python``, from ``sources`` (``where``: those words for the plan line); ``force`` replaces
    torch's files first (its version.py disagrees with the metadata pip trusts)."""

    variant: str
    python: str
    specs: tuple[str, ...]
    force: bool
    sources: Sources
    where: str


def sources_for(params: TorchParams, state: TorchState, variant: str) -> tuple[Sources, str]:
    """Where the node installs from, and those words for the plan line."""
    if params.sources.custom:
        return params.sources, params.sources.describe(variant)
    try:
        node = pipconfig.node_pip(state.pip_files, state.pip_env)
    except ValueError as error:
        raise TaskFailed(f"{error}; fix it, or set pip_index_url or pip_find_links") from None
    if node.configured:
        return node.sources, f"{node.sources.describe(variant)} ({node.describe()})"
    return params.sources, params.sources.describe(variant)


def pip_cert(state: TorchState) -> str:
    """The CA bundle the node's pip verifies HTTPS with besides its default trust ("": none):
    uv is given it with that trust (``installer``), so a site mirror pip trusts does not fail
    uv, nor does a public index."""
    try:
        return pipconfig.node_pip(state.pip_files, state.pip_env).cert
    except ValueError:  # pip cannot read its files: sources_for or pip itself says so
        return ""


def installed_with(ctx: Context, params: TorchParams, state: TorchState
                   ) -> tuple[PeerUpload | None, str]:
    """uv's copy where the node needs it, and the plan line's words on the installer: uv, or
    pip and why."""
    distribution = ctx.state(Distribution)
    copy, why_not = installer.uv_for(state.uv, ctx.facts.arch, ctx.facts.python_path or "python3",
                                     params.sources, distribution.here if distribution else None)
    if copy is not None and not ctx.facts.python_path:
        copy = None  # nothing could unpack it: uv's first install on this node waits
    if copy is not None:
        copy = plan_copy(distribution, ctx.host.name, ctx.facts, params.subnet, copy)[0]
    return copy, (f"with uv {installer.UV_VERSION}" if why_not is None
                  else f"with pip ({why_not})")


def install_actions(ctx: Context, params: TorchParams, state: TorchState, wanted: Wanted
                    ) -> tuple[tuple[Action, ...], str, str]:
    """Everything but the final import check: uv sent if need be, the wheels, the install;
    the words on where the wheels come from (wheelhouse and download_once modes) and on the
    installer (uv, or pip and why)."""
    variant, python, specs, where = wanted.variant, wanted.python, wanted.specs, wanted.where
    sources = wanted.sources.options(variant)
    prepare: list[Action] = []
    finish: list[Action] = []
    wheels_dir = wheels_from = ""
    source, fix = where, FIX_NODE
    if params.wheelhouse or params.download_once:
        # a node downloads or fetches into a folder of root's; an upload (the login user's
        # folder) is copied into root's, each file checked (wheels.staged): installed from
        folder = f"{REMOTE_WHEELHOUSE}/{variant}-torch-{params.version}"
        wheels_dir = root_copy(folder) if params.wheelhouse else folder
        wheel_set = WheelSet(platform_args(_minor(python), _need_glibc(state), ctx.facts.arch),
                             (wheel_spec(params.version, variant), *params.wanted_packages),
                             params.sources, Sources().options(variant), variant)
        key = "\0".join((*wheel_set.platform, *wheel_set.specs, *sources, wheels_dir))
        if params.wheelhouse:
            local = local_dir(params, variant, python, state, ctx)
            copy = PeerUpload(local, folder, key=f"{local}\0{key}", fill=wheel_set,
                              optional=f"the node installs from {where} itself",
                              staged=wheels_dir)
            upload, wheels_from = plan_copy(ctx.state(Distribution), ctx.host.name, ctx.facts,
                                            params.subnet, copy)
            prepare = [upload]
            source, fix = f"this machine's wheelhouse, else {where}", FIX_HERE
        else:
            download = PeerDownload(
                (f"{params.venv}/bin/python", "-m", "pip", "download", "--dest", wheels_dir,
                 "--no-cache-dir", "--disable-pip-version-check", "--only-binary=:all:",
                 *wheel_set.platform, "--no-input", "--progress-bar", "off", *sources, "--",
                 *wheel_set.specs),
                hint=f"could the node not reach {where}? {FIX_NODE}", key=key,
                remote_path=wheels_dir, wanted=wheel_set)
            fetched, wheels_from = plan_download(ctx.state(Distribution), ctx.host.name, ctx.facts,
                                                 params.subnet, download)
            make_dir = Run(("sh", "-c", installer.MAKE_ROOT_DIR, "nodeprov-mkdir", wheels_dir))
            prepare = [make_dir, fetched]
        finish = [Run(("rm", "-rf", "--", *dict.fromkeys((folder, wheels_dir))))]
    uv, with_what = installed_with(ctx, params, state)
    with_uv, cert = with_what.startswith("with uv"), pip_cert(state)
    if uv is not None:
        prepare.insert(0, uv)
    origin = installer.Origin(sources, wheels_dir, cert, source, fix)
    if wanted.force:  # version.py disagrees with the metadata pip trusts: replace torch's files
        prepare.append(installer.install(params.venv, specs[:1], origin, reinstall=True,
                                         with_uv=with_uv))
    return (*prepare, installer.install(params.venv, specs, origin, with_uv=with_uv),
            *finish), wheels_from, with_what


def local_dir(params: TorchParams, variant: str, python: str, state: TorchState,
              ctx: Context) -> str:
    target = target_name(_minor(python), _need_glibc(state), ctx.facts.arch)
    return wheelhouse.local_dir(variant, f"torch-{params.version}-{target}")


def _need_glibc(state: TorchState) -> tuple[int, int]:
    if state.glibc is None:
        raise TaskFailed("wheelhouse and download_once need a glibc node ('getconf "
                         "GNU_LIBC_VERSION' printed nothing): use pip_find_links or "
                         "pip_index_url instead")
    return state.glibc


def _minor(python: str) -> str:
    return ".".join(python.split(".")[:2])
