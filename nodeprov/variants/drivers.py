"""Which CUDA runtimes an NVIDIA driver runs: NVIDIA's tables, in this one place.

    >>> runs((535, 129, 3), (12, 8)), full_support((535, 129, 3))
    (True, (12, 2))

Sources (NVIDIA, read on docs.nvidia.com):

- ``TOOLKIT_DRIVER``: CUDA Toolkit Release Notes, table 3 "CUDA Toolkit and Corresponding Driver
  Versions", Linux x86_64 column, the GA release of each toolkit. A driver at least this new
  supports the toolkit fully, PTX JIT included.
- ``MINOR_VERSION_DRIVER``: CUDA Compatibility guide, "Minor Version Compatibility", table 1
  "CUDA Toolkit 11.x, 12.x, and 13.x Driver Version Ranges" (>= 450.80.02 for 11.x per its note,
  >= 525.60.13 for 12.x, >= 580 for 13.x). A runtime of that major version runs on such a driver
  "with limited feature-set": no PTX JIT of code newer than the driver. PyTorch's wheels bundle
  their runtime and rely on this.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

Cuda = tuple[int, int]
Driver = tuple[int, ...]

TOOLKIT_DRIVER: Final[Mapping[Cuda, Driver]] = {
    (11, 0): (450, 36, 6), (11, 1): (455, 23), (11, 2): (460, 27, 3), (11, 3): (465, 19, 1),
    (11, 4): (470, 42, 1), (11, 5): (495, 29, 5), (11, 6): (510, 39, 1), (11, 7): (515, 43, 4),
    (11, 8): (520, 61, 5), (12, 0): (525, 60, 13), (12, 1): (530, 30, 2), (12, 2): (535, 54, 3),
    (12, 3): (545, 23, 6), (12, 4): (550, 54, 14), (12, 5): (555, 42, 2), (12, 6): (560, 28, 3),
    (12, 8): (570, 26), (12, 9): (575, 51, 3), (13, 0): (580, 65, 6), (13, 1): (590, 44, 1),
}
MINOR_VERSION_DRIVER: Final[Mapping[int, Driver]] = {
    11: (450, 80, 2), 12: (525, 60, 13), 13: (580,),
}
_DRIVER_RE = re.compile(r"\d{2,4}(?:\.\d{1,3}){1,2}")  # the shape gpu/nvidia.py accepts


def parse_driver(text: str) -> Driver:
    """``"535.129.03"`` -> (535, 129, 3); anything else is refused.

    >>> parse_driver("570.26")
    (570, 26)
    """
    if not _DRIVER_RE.fullmatch(text):
        raise ValueError(f"not an NVIDIA driver version: {text[:40]!r} (expected e.g. 535.129.03)")
    return tuple(int(part) for part in text.split("."))


def show_driver(driver: Driver) -> str:
    return ".".join(f"{part:02d}" if index else str(part) for index, part in enumerate(driver))


def runs(driver: Driver, cuda: Cuda) -> bool:
    """Whether a CUDA ``cuda`` runtime (a wheel's bundled one) starts on this driver."""
    full = TOOLKIT_DRIVER.get(cuda)
    if full is not None and driver >= full:
        return True
    minor = MINOR_VERSION_DRIVER.get(cuda[0])
    return minor is not None and driver >= minor


def full_support(driver: Driver, reported: Cuda | None = None) -> Cuda | None:
    """The newest CUDA the driver supports fully (PTX JIT included): from table 3, or what the
    driver itself reports in the nvidia-smi header when that is newer than the table knows."""
    known = [cuda for cuda, needed in TOOLKIT_DRIVER.items() if driver >= needed]
    best = max(known) if known else None
    if reported is not None and (best is None or reported > best):
        return reported
    return best


def minimum_driver(cuda: Cuda) -> str:
    """The driver a CUDA runtime needs, in words, for error messages."""
    minor = MINOR_VERSION_DRIVER.get(cuda[0])
    if minor is not None:
        return f">= {show_driver(minor)} (CUDA {cuda[0]}.x minor version compatibility)"
    full = TOOLKIT_DRIVER.get(cuda)
    return f">= {show_driver(full)}" if full else "a driver newer than nodeprov knows"
