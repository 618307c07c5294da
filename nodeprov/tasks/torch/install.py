"""How the torch task installs: its sources, the wheelhouse, and uv or pip on the node.

    sources, where = sources_for(params, state, variant)
    actions, wheels_from = install_actions(ctx, params, state, variant, python, specs, force,
                                           sources)

Sources: the inventory's ``pip_*`` variables, else the node's own pip configuration
(``pipconfig``), else PyTorch's index of the variant with PyPI. In wheelhouse mode this machine
downloads the wheels once and pushes them to one node, which the others fetch them from over
the node subnet (``wheels.peers``; ``wheels_from`` says which); the node installs from that
copy only. With ``download_once`` the first node downloads them from those sources itself
(pip download, for its own platform) and the others fetch its copy the same way.
"""

from __future__ import annotations

import ipaddress
import sys
from typing import TYPE_CHECKING

from nodeprov.tasks.base import Action, Context, Local, Run, TaskFailed, Upload
from nodeprov.variants.choose import wheel_spec
from nodeprov.wheels import installer, pipconfig, wheelhouse
from nodeprov.wheels.peers import DOWNLOADED, UPLOADED, PeerDownload, PeerUpload
from nodeprov.wheels.wheelhouse import Sources, download_args, target_name

if TYPE_CHECKING:
    from nodeprov.tasks.torch.params import TorchParams, TorchState

REMOTE_WHEELHOUSE = "/var/cache/nodeprov/wheelhouse"


def sources_for(params: TorchParams, state: TorchState, variant: str) -> tuple[Sources, str]:
    """Where the node installs from, and those words for the plan line. The wheelhouse is
    filled here, from this machine's sources: the node's pip configuration names its own."""
    if params.sources.custom or params.wheelhouse:
        return params.sources, params.sources.describe(variant)
    try:
        node = pipconfig.node_pip(state.pip_files, state.pip_env)
    except ValueError as error:
        raise TaskFailed(f"{error}; fix it, or set pip_index_url or pip_find_links") from None
    if node.configured:
        return node.sources, f"{node.sources.describe(variant)} ({node.describe()})"
    return params.sources, params.sources.describe(variant)


def installed_with(ctx: Context, state: TorchState) -> str:
    """The plan line's words on the installer: uv, or pip and why."""
    why_not = installer.uv_unusable(state.uv, ctx.facts.arch)
    return f"with uv {installer.UV_VERSION}" if why_not is None else f"with pip ({why_not})"


def install_actions(ctx: Context, params: TorchParams, state: TorchState, variant: str,
                    python: str, specs: list[str], force: bool,
                    chosen: Sources) -> tuple[tuple[Action, ...], str]:
    """Everything but the final import check: uv pushed if need be, the wheels, the install;
    and in wheelhouse mode, where the wheels come from (``peer_upload``)."""
    sources = chosen.options(variant)
    hint = (f"could the node not reach {chosen.describe(variant)}? set pip_index_url or "
            "pip_find_links to a source it reaches, or wheelhouse: true to send the wheels "
            "from this machine")
    prepare: list[Action] = []
    finish: list[Action] = []
    env: tuple[str, ...] = ()
    wheels_from = ""
    if params.wheelhouse or params.download_once:
        remote_dir = f"{REMOTE_WHEELHOUSE}/{variant}-torch-{params.version}"
        wanted = (wheel_spec(params.version, variant), *params.packages)
        args = download_args(_minor(python), _need_glibc(state), ctx.facts.arch, sources, wanted)
        make_dir = Run(("sh", "-c", installer.MAKE_UPLOAD_DIR, "nodeprov-mkdir", remote_dir))
        if params.wheelhouse:
            local = local_dir(params, variant, python, state, ctx)
            fill = Local((sys.executable, "-m", "nodeprov.wheels.wheelhouse", local, *args))
            # one wheel set: what is downloaded, and where it goes
            upload, wheels_from = peer_upload(ctx, local, remote_dir, "\0".join(
                (*fill.argv, remote_dir)), params.subnet)
            prepare = [fill, make_dir, upload]
        else:
            download = Run((f"{params.venv}/bin/python", "-m", "pip", args[0], "--dest",
                            remote_dir, "--no-cache-dir", "--disable-pip-version-check",
                            *args[1:]), hint=hint)
            fetched, wheels_from = peer_download(ctx, download, remote_dir, params.subnet)
            prepare = [make_dir, fetched]
        # only the pushed wheels: not an index or find-links from the node's pip.conf
        env = ("env", "PIP_CONFIG_FILE=/dev/null")
        sources = ("--no-index", "--find-links", remote_dir)
        finish = [Run(("rm", "-rf", "--", remote_dir))]
        hint = ""
    with_uv = installer.uv_unusable(state.uv, ctx.facts.arch) is None
    if with_uv and ctx.facts.python_path:
        prepare[:0] = installer.push_uv(state.uv, ctx.facts.arch, ctx.facts.python_path)
    run = installer.install if with_uv else installer.pip_install
    if force:  # version.py disagrees with the metadata pip trusts: replace torch's files
        prepare.append(_with_env(env, run(params.venv, sources, specs[:1], reinstall=True,
                                          hint=hint)))
    return (*prepare, _with_env(env, run(params.venv, sources, specs, hint=hint)),
            *finish), wheels_from


def _with_env(env: tuple[str, ...], action: Run) -> Run:
    return Run((*env, *action.argv), hint=action.hint) if env else action


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


def peer_upload(ctx: Context, local: str, remote: str, key: str,
                subnet: str | None) -> tuple[Upload, str]:
    """The action sending ``local`` to this host, and the plan's words on where it comes from:
    a PeerUpload when the run distributes and this host has an address in ``subnet``."""
    address = _address(ctx, subnet)
    if ctx.distribution is None or address is None or not ctx.facts.python_path:
        return Upload(local, remote), UPLOADED
    seed = ctx.distribution.seed_for(key, ctx.host.name)
    words = UPLOADED if seed == ctx.host.name else f"from {seed} over the node subnet"
    return PeerUpload(local, remote, key, address, ctx.facts.python_path), words


def peer_download(ctx: Context, download: Run, remote: str,
                  subnet: str | None) -> tuple[Run, str]:
    """``download`` (into ``remote``) as one node's for all whose download is the same, and
    the plan's words on where the wheels come from; the plain download without peers."""
    address = _address(ctx, subnet)
    if ctx.distribution is None or address is None or not ctx.facts.python_path:
        return download, DOWNLOADED
    key = "\0".join((*download.argv, remote))
    seed = ctx.distribution.seed_for(key, ctx.host.name)
    words = (f"{DOWNLOADED}, for the other nodes too" if seed == ctx.host.name
             else f"downloaded once by {seed}, fetched over the node subnet")
    return PeerDownload(download.argv, hint=download.hint, key=key, remote_path=remote,
                        address=address, python=ctx.facts.python_path), words


def _address(ctx: Context, subnet: str | None) -> str | None:
    """This host's address in ``subnet``, where it serves wheels."""
    addresses = ctx.facts.interfaces_in(subnet) if subnet else []
    if not addresses:
        return None
    return str(ipaddress.ip_interface(addresses[0].addresses_in(str(subnet))[0]).ip)
