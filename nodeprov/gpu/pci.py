"""GPUs on the PCI bus, seen without any driver: ``facts.sh`` lists every device under
``/sys/bus/pci/devices`` whose vendor is NVIDIA (0x10de) or AMD (0x1002) and whose class is a
display controller (0x03xxxx: VGA, 3D, other) or a processing accelerator (0x12xxxx, as AMD
Instinct MI300 reports), one line each: slot, vendor, device, class, as sysfs prints them::

    >>> parse_pci_gpus("0000:17:00.0 0x10de 0x2330 0x030200")[0].vendor
    'nvidia'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

VENDORS = {"0x10de": "nvidia", "0x1002": "amd"}
_LINE_RE = re.compile(r"([0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]) (0x10de|0x1002) "
                      r"(0x[0-9a-f]{4}) (0x(?:03|12)[0-9a-f]{4})")


@dataclass(frozen=True)
class PciGpu:
    slot: str
    vendor: str  # "nvidia" or "amd"
    device_id: str  # e.g. 0x2330
    pci_class: str  # e.g. 0x030200

    def describe(self) -> str:
        return f"{self.vendor.upper() if self.vendor == 'amd' else 'NVIDIA'} GPU " \
               f"[{self.device_id}] at {self.slot}"


def parse_pci_gpus(text: str) -> tuple[PciGpu, ...]:
    """Parse facts.sh's ``pci_gpus`` section; a line of any other shape is refused."""
    gpus = []
    for line in text.splitlines():
        if not line.strip():
            continue
        match = _LINE_RE.fullmatch(line.strip())
        if match is None:
            raise ValueError(f"unexpected pci_gpus line {line[:80]!r}; expected "
                             "'<slot> <0x10de|0x1002> <0xdevice> <0x03xxxx|0x12xxxx>'")
        slot, vendor, device, pci_class = match.groups()
        gpus.append(PciGpu(slot, VENDORS[vendor], device, pci_class))
    return tuple(gpus)
