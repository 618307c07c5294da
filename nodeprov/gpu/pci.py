"""GPUs on the PCI bus, seen without any driver. ``facts.sh`` lists every PCI function under
``/sys/bus/pci/devices`` as sysfs prints it (slot, vendor, device, class); a GPU is one whose
vendor is NVIDIA (0x10de) or AMD (0x1002) and whose class is a display controller (0x03xxxx:
VGA, 3D, other) or a processing accelerator (0x12xxxx, as AMD Instinct MI300 reports)::

    >>> parse_pci_gpus("0000:17:00.0 0x10de 0x2330 0x030200\\n0000:00:00.0 0x8086 0x09a2 0x088000")
    (PciGpu(slot='0000:17:00.0', vendor='nvidia', device_id='0x2330', pci_class='0x030200'),)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

VENDORS = {"0x10de": "nvidia", "0x1002": "amd"}
GPU_CLASSES = ("0x03", "0x12")
_LINE_RE = re.compile(r"([0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]) (0x[0-9a-f]{4}) "
                      r"(0x[0-9a-f]{4}) (0x[0-9a-f]{6})")


@dataclass(frozen=True)
class PciGpu:
    slot: str
    vendor: str  # "nvidia" or "amd"
    device_id: str  # e.g. 0x2330
    pci_class: str  # e.g. 0x030200

    def describe(self) -> str:
        return f"{'NVIDIA' if self.vendor == 'nvidia' else 'AMD'} GPU [{self.device_id}] at " \
               f"{self.slot}"


def parse_pci_gpus(text: str) -> tuple[PciGpu, ...]:
    """The GPUs among facts.sh's ``pci_devices`` lines; a line of any other shape is refused."""
    gpus = []
    for line in text.splitlines():
        if not line.strip():
            continue
        match = _LINE_RE.fullmatch(line.strip())
        if match is None:
            raise ValueError(f"unexpected pci_devices line {line[:80]!r}; expected "
                             "'<slot> 0x<vendor> 0x<device> 0x<class>' as sysfs prints them")
        slot, vendor, device, pci_class = match.groups()
        if vendor in VENDORS and pci_class.startswith(GPU_CLASSES):
            gpus.append(PciGpu(slot, VENDORS[vendor], device, pci_class))
    return tuple(gpus)
