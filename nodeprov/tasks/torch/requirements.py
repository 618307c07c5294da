"""What a venv holds against requirement specs, as pip would judge them on the node: its
``*.dist-info`` folders read, the node's marker values, the specs left unsatisfied::

    installed = parse_dist_infos(listing)          # {'torch': '2.13.0+cpu', ...}
    unsatisfied(["torch==2.13.0"], installed, marker_environment("3.11.2", "x86_64"))  # []
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion


def parse_dist_infos(listing: str) -> dict[str, str]:
    """PEP 503 names and versions from ``*.dist-info`` folder names.

    >>> parse_dist_infos("typing_extensions-4.15.0.dist-info\\ntorch-2.13.0+cpu.dist-info")
    {'typing-extensions': '4.15.0', 'torch': '2.13.0+cpu'}
    """
    installed: dict[str, str] = {}
    for line in listing.split():
        name, sep, version = line.removesuffix(".dist-info").rpartition("-")
        if sep and line.endswith(".dist-info"):
            installed[canonicalize_name(name)] = version
    return installed


def marker_environment(python: str, arch: str) -> dict[str, str]:
    """The node's values for requirement markers (``; python_version < "3.12"``)."""
    return {"python_version": ".".join(python.split(".")[:2]), "python_full_version": python,
            "platform_machine": arch, "platform_system": "Linux", "sys_platform": "linux",
            "os_name": "posix", "implementation_name": "cpython",
            "platform_python_implementation": "CPython", "extra": ""}


def unsatisfied(specs: Sequence[str], installed: Mapping[str, str],
                environment: Mapping[str, str]) -> list[str]:
    """The specs that apply to the node and are not installed at a matching version.

    >>> unsatisfied(["torch==2.9.1", "six>=2"], {"torch": "2.9.1+cpu", "six": "1.17.0"}, {})
    ['six>=2']
    """
    missing = []
    for spec in specs:
        requirement = Requirement(spec)
        if requirement.marker and not requirement.marker.evaluate(dict(environment)):
            continue
        version = installed.get(canonicalize_name(requirement.name))
        try:
            ok = version is not None and (requirement.url is not None or
                                          requirement.specifier.contains(version, True))
        except InvalidVersion:
            ok = False
        if not ok:
            missing.append(spec)
    return missing
