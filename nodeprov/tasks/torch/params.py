"""The torch task's parameters, and what its probe saw in the venv::

    params = TorchParams(venv="/opt/nodeprov/venv", version="2.13.0", cuda="auto")
    params.sources.options("cpu")   # where the node installs from (nodeprov.wheels.wheelhouse)

Each parameter is checked when the play is loaded, before any connection.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name

from nodeprov.inventory.variables import VARIABLES
from nodeprov.util import validate
from nodeprov.variants.choose import wheel_spec
from nodeprov.wheels.installer import UvState
from nodeprov.wheels.sources import Sources


def _check_requirement(spec: str) -> None:
    try:
        name = canonicalize_name(Requirement(spec).name)
    except InvalidRequirement as error:
        # packaging's message draws a caret diagram below its first line: one line is enough
        first_line = str(error).splitlines()[0] if str(error) else "invalid"
        raise ValueError(f"packages: {spec!r} is not a pip requirement: {first_line}") from None
    if name == "torch":
        raise ValueError("packages: torch comes from version and cuda; remove it from packages")


@dataclass(frozen=True)
class TorchParams:
    venv: str = "/opt/nodeprov/venv"
    version: str = "2.13.0"
    cuda: str = "auto"
    packages: tuple[str, ...] = ()
    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    wheelhouse: bool = False
    download_once: bool = False
    subnet: str | None = None
    python_version: str = "3.10"  # the venv task's minimum: which python a new venv gets
    numpy: bool = True  # torch warns on import, in every rank, without it

    def __post_init__(self) -> None:
        validate.absolute_path(self.venv)
        validate.version(self.python_version)
        if self.subnet is not None:
            validate.cidr(self.subnet)
        wheel_spec(self.version, "cpu")  # a full version: 2.13.0
        VARIABLES["torch_cuda"].check(self.cuda)
        for spec in (*self.packages, *self.extra_index_urls, *self.find_links,
                     *filter(None, [self.index_url])):
            validate.option_safe(spec)
        for spec in self.packages:
            _check_requirement(spec)
        if self.wheelhouse and self.download_once:
            raise ValueError("download_once: the wheelhouse already downloads once (on this "
                             "machine); set wheelhouse or download_once, not both")

    @property
    def sources(self) -> Sources:
        return Sources(self.index_url, self.extra_index_urls, self.find_links)

    @property
    def wanted_packages(self) -> tuple[str, ...]:
        """``packages``, and numpy unless turned off or named there: the 1.x line for torch
        before 2.3, which was built against it and fails to load numpy 2's C API.

        >>> TorchParams(version="2.2.2", packages=("six",)).wanted_packages
        ('six', 'numpy<2')
        """
        names = {canonicalize_name(Requirement(spec).name) for spec in self.packages}
        if not self.numpy or "numpy" in names:
            return self.packages
        old = tuple(int(part) for part in self.version.split(".")[:2]) < (2, 3)
        return (*self.packages, "numpy<2" if old else "numpy")


@dataclass(frozen=True)
class TorchState:
    """What the probe saw in the venv (``python`` None: no venv yet)."""

    python: str | None
    glibc: tuple[int, int] | None
    torch_version: str | None
    torch_cuda: str | None
    torch_requires: tuple[str, ...]
    installed: Mapping[str, str]  # PEP 503 name -> version, from *.dist-info folder names
    pip_files: Mapping[str, str | None] = field(default_factory=dict)  # pipconfig
    pip_env: Mapping[str, str] = field(default_factory=dict)
    uv: UvState = UvState(False)
