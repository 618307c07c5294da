"""The ROCm release installed on an AMD GPU node, from ``/opt/rocm/.info/version`` ("6.2.0-66")
or, failing that, ``amd-smi version`` ("... | ROCm version: 6.2.0")::

    >>> parse_rocm_version("6.4.1-120\\n", "")
    (6, 4, 1)
"""

from __future__ import annotations

import re

_INFO_RE = re.compile(r"(\d+)\.(\d+)\.(\d+)(?:-\d+)?")
_AMD_SMI_RE = re.compile(r"ROCm version:\s*(\d+)\.(\d+)(?:\.(\d+))?")


def parse_rocm_version(info_version: str, amd_smi_version: str) -> tuple[int, ...] | None:
    """The installed ROCm as (major, minor[, patch]); None when neither source names one."""
    info = info_version.strip()
    if info:
        match = _INFO_RE.fullmatch(info.splitlines()[0].strip())
        if match is None:
            raise ValueError(f"/opt/rocm/.info/version says {info[:40]!r}; expected e.g. 6.2.0-66")
        return tuple(int(part) for part in match.groups())
    found = _AMD_SMI_RE.search(amd_smi_version)
    if found is None:
        return None
    return tuple(int(part) for part in found.groups() if part is not None)
