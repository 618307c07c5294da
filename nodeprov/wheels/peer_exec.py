"""Run a task's actions where some are the wheels' own: a PeerUpload or PeerDownload (the seed
uploads or downloads and serves, the others fetch from it: ``peers``), and an Install, whose
failure is said as what could not be installed from where, and how to fix it. Everything else
goes to ``Session.execute``, in as few round trips as before.

    read = execute(session, distribution, "torch", actions, then_read=probes)

An optional copy that fails (this machine cannot download uv, a node cannot unpack it) is a
warning for the task (``Distribution.warn``), and the steps after it run without it: the
install script then uses pip, or the node's own sources.

What a node downloads, fetches from a peer or installs is counted on the node as it goes
(``written.counting_writes``): the live display's bars show it, as they show uploads.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import suppress
from typing import TYPE_CHECKING

from nodeprov.errors import CommandFailed, HostError
from nodeprov.remote.actions import Action, Run, Write
from nodeprov.util.redact import mask_urls
from nodeprov.util.units import clipped
from nodeprov.wheels import installer, staged, trust
from nodeprov.wheels.installer import MAKE_UPLOAD_DIR, Install
from nodeprov.wheels.peer_transfer import fetch, pinned_files, serve
from nodeprov.wheels.peers import (
    Distribution,
    PeerCopy,
    PeerDownload,
    PeerUpload,
    alone,
)
from nodeprov.wheels.resolve import requirements
from nodeprov.wheels.wheelhouse import DownloadFailed
from nodeprov.wheels.written import counting_writes

DETAIL_LINES = 8  # of a failed install's output, below its first line
FIRST_LINE = 199  # characters at most
_REQUIREMENTS = ".nodeprov-requirements.txt"  # in the download folder: a dot file, not served

if TYPE_CHECKING:
    from nodeprov.remote.actions import Probe
    from nodeprov.remote.facts import Facts
    from nodeprov.remote.session import Session


class InstallFailed(HostError):
    """Nothing could install: the first line names the node, the task, what, from where and
    how to fix it (under 200, a refused certificate's words after); the tool's last lines next."""

    def __init__(self, node: str, task: str, message: str, *, hint: str,
                 details: Sequence[str]) -> None:
        self.details = tuple(details)
        super().__init__(node, task, message, hint=hint)

    def _render(self) -> str:
        return "\n".join([super()._render(), *(f"  {line}" for line in self.details)])


def execute(session: Session, distribution: Distribution, task: str,
            actions: Sequence[Action], then_read: Sequence[Probe | None] | None = None
            ) -> tuple[Facts, list[str]] | None:
    """``session.execute``, with the wheels' own actions run here."""
    host = session.host.name
    pending: list[Action] = []
    try:
        for action in actions:
            if isinstance(action, PeerUpload):
                _batch(session, task, pending)
                pending = []
                _copy(session, distribution, task, action)
            elif isinstance(action, PeerDownload):
                _batch(session, task, pending)
                pending = []
                _download(session, distribution, task, action)
            else:
                pending.append(action)
        return _batch(session, task, pending, then_read)
    except BaseException:
        for action in actions:  # a seed that will never serve: its waiters do without it
            if isinstance(action, PeerCopy) and distribution.seed_for(action.key, host) == host:
                distribution.failed(action.key)
        raise


def _batch(session: Session, task: str, actions: Sequence[Action],
           then_read: Sequence[Probe | None] | None = None
           ) -> tuple[Facts, list[str]] | None:
    """The actions in one round trip; an Install's failure said as ``InstallFailed``."""
    if not actions and then_read is None:
        return None
    installs = [action for action in actions if isinstance(action, Install)]
    try:
        if not installs:
            return session.execute(task, actions, then_read=then_read)
        with counting_writes(session, task, str(installs[-1]), f"{installs[-1].venv}/bin/python",
                             installs[-1].folders):
            return session.execute(task, actions, then_read=then_read)
    except CommandFailed as error:
        failed = next((a for a in actions if isinstance(a, Install) and str(a) == error.command),
                      None)
        if failed is None:
            raise
        raise install_failed(error, failed) from None


def install_failed(error: CommandFailed, action: Install) -> InstallFailed:
    """The install's failure: a line under 200 characters (the source shortened to fit), then
    the tool's last lines (credentials masked). A certificate the installer that ran last
    refused (pip's, where uv failed first) is said so after the action's own advice, which
    stays (``trust``): that line runs past 200, the source keeping its room (which index
    refused matters more than the length)."""
    fixed = len(f"{error.node}: {error.task}: could not install {action.what} from  "
                f"({action.hint})")
    source = clipped(action.source, max(FIRST_LINE - fixed, 24))
    refused = trust.untrusted(installer.last_output(error.output))
    hint = "; ".join(filter(None, (action.hint, trust.ON_NODE if refused else "")))
    lines = [line.strip() for line in mask_urls(error.output).splitlines() if line.strip()]
    details = [clipped(line, 300) for line in lines[-DETAIL_LINES:]] or [
        f"exited {error.returncode}"]
    return InstallFailed(error.node, error.task, f"could not install {action.what}"
                         + (f" from {source}" if source else ""), hint=hint, details=details)


def _copy(session: Session, distribution: Distribution, task: str, action: PeerUpload) -> None:
    """The copy, this machine's download first; an optional one that fails is a warning and
    leaves no folder behind."""
    try:
        if action.fill is not None:
            distribution.here.fill(action.local_path, action.fill)
        session.execute(task, [Run(("sh", "-c", MAKE_UPLOAD_DIR, "nodeprov-mkdir",
                                    action.remote_path))])
        _upload_or_fetch(session, distribution, task, action)
        if action.staged:  # the login user could change the upload: root installs its copy
            staged.stage(session, task, action.python, action.remote_path, action.staged,
                         distribution.expected(action))
        if action.then:
            session.execute(task, [Run(action.then)])
    except (DownloadFailed, HostError) as error:
        if isinstance(error, HostError):
            if not action.optional or isinstance(error, staged.WheelChanged):
                raise
            why = mask_urls(error.message)
        else:
            why = f"this machine could not download {action.fill.what if action.fill else ''} " \
                  f"{mask_urls(str(error))}"
            if not action.optional:
                raise HostError(session.host.name, task, why) from None
        distribution.warn(session.host.name, f"{action.optional}: {why}")
        with suppress(HostError):
            session.execute(task, [Run(("rm", "-rf", "--", action.remote_path,
                                        *filter(None, [action.staged])))])


def _upload_or_fetch(session: Session, distribution: Distribution, task: str,
                     action: PeerUpload) -> None:
    host = session.host.name
    if not action.address:
        session.execute(task, [alone(action)])
        return
    if distribution.seed_for(action.key, host) == host:
        session.execute(task, [alone(action)])
        if not serve(session, distribution, task, action, distribution.expected(action)):
            distribution.failed(action.key)
        return
    files = distribution.expected(action)  # this machine's copy: hashed while the seed uploads
    why = fetch(session, distribution, task, action, files)
    if why is None:
        serve(session, distribution, task, action, files)  # the copies spread as a tree
        return
    distribution.warn(host, f"wheels uploaded from this machine after all: {why}")
    session.execute(task, [alone(action)])


def _download(session: Session, distribution: Distribution, task: str,
              action: PeerDownload) -> None:
    """download_once: the seed downloads exactly what this machine resolved, the others fetch
    its copy and check it against that; where nothing can be checked, each downloads its own."""
    host = session.host.name
    seed = distribution.seed_for(action.key, host) == host
    try:
        if action.wanted is None:
            raise DownloadFailed("nothing to resolve them from")
        pins = distribution.here.pins(action.wanted)
    except DownloadFailed as error:
        if seed:
            distribution.failed(action.key)
        distribution.warn(host, "wheels downloaded by this node alone: this machine could not "
                          f"resolve them to check the others' copies ({mask_urls(str(error))})")
        _download_here(session, task, action, [alone(action)])
        return
    if seed:
        try:
            _download_here(session, task, action,
                           [Write(f"{action.remote_path}/{_REQUIREMENTS}", requirements(pins),
                                  mode=0o600), Run(_pinned(action), hint=action.hint)])
        except CommandFailed as error:
            distribution.failed(action.key)
            distribution.warn(host, "the wheels this machine resolved could not be downloaded "
                              f"here ({_last_line(error.output)}): this node downloaded its own")
            _download_here(session, task, action, [alone(action)])
            return
        if not serve(session, distribution, task, action, pinned_files(pins)):
            distribution.failed(action.key)
        return
    why = fetch(session, distribution, task, action, pinned_files(pins))
    if why is None:
        serve(session, distribution, task, action, pinned_files(pins))
        return
    distribution.warn(host, f"wheels downloaded by this node after all: {why}")
    _download_here(session, task, action, [alone(action)])


def _download_here(session: Session, task: str, action: PeerDownload,
                   actions: Sequence[Action]) -> None:
    """The node's own download, its bytes counted as they come."""
    with counting_writes(session, task, "download the wheels", action.python,
                         (action.remote_path,)):
        session.execute(task, actions)


def _pinned(action: PeerDownload) -> tuple[str, ...]:
    """The download's argv for exactly the resolved files: the specs replaced by the hashed
    requirements (pip's hash-checking mode)."""
    head = action.argv[:action.argv.index("--")] if "--" in action.argv else action.argv
    return (*head, "--no-deps", "-r", f"{action.remote_path}/{_REQUIREMENTS}")


def _last_line(output: str) -> str:
    lines = [line.strip() for line in mask_urls(output).splitlines() if line.strip()]
    return (lines or ["no output"])[-1][:200]
