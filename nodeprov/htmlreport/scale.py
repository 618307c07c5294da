"""Where a value lands on a chart's axis, and round values for its ticks: all the arithmetic
the SVG templates need (they only place what these give)::

    >>> sizes = Scale(8, 8 * 4**12, 60, 700, log=True)     # message sizes, log2
    >>> sizes(8), sizes(8 * 4**6), sizes(8 * 4**12)
    (60.0, 380.0, 700.0)
    >>> busbw = Scale(0, 2.0, 320, 20)                      # pixels grow downwards
    >>> busbw(0), busbw(1.5)
    (320.0, 95.0)
    >>> round_ticks(0.137)
    [0.0, 0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.14]
"""

from __future__ import annotations

import math
from dataclasses import dataclass

_STEPS = (1.0, 2.0, 5.0, 10.0)


@dataclass(frozen=True)
class Tick:
    """A labelled mark on an axis, at pixel ``at``."""

    at: float
    label: str


@dataclass(frozen=True)
class Scale:
    """Maps ``low..high`` onto the pixels ``start..end`` (linearly, or by log2 with ``log``)."""

    low: float
    high: float
    start: float
    end: float
    log: bool = False

    def __call__(self, value: float) -> float:
        low, high, value = ((math.log2(v) for v in (self.low, self.high, value)) if self.log
                            else (self.low, self.high, value))
        share = (value - low) / (high - low) if high != low else 0.5
        return round(self.start + share * (self.end - self.start), 1)


def round_ticks(highest: float, most: int = 8) -> list[float]:
    """Ticks from 0 at a 1, 2 or 5 step, up to the first at or above ``highest``, at most
    ``most`` steps.

    >>> round_ticks(650), round_ticks(0)
    ([0.0, 100.0, 200.0, 300.0, 400.0, 500.0, 600.0, 700.0], [0.0, 1.0])
    """
    if highest <= 0:
        return [0.0, 1.0]
    magnitude = 10.0 ** math.floor(math.log10(highest / most))
    step = next(magnitude * s for s in _STEPS if highest / (magnitude * s) <= most)
    count = math.ceil(highest / step - 1e-9)
    return [float(f"{i * step:.12g}") for i in range(count + 1)]
