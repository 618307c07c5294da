"""nodeside/cuda_capability.py on a node whose python3 cannot do what it needs: it says so in
its one error line, and the PCI ids give the capability (stand-ins with a library:
tests/remote/test_facts_gpu.py)."""

from __future__ import annotations

import subprocess
import sys

from nodeprov.gpu.capability import parse_cuda_probe, with_capabilities
from nodeprov.gpu.nvidia import Gpu, GpuInfo
from nodeprov.gpu.pci import parse_pci_gpus
from tests.sources import PACKAGE

PROBE = PACKAGE / "nodeside" / "cuda_capability.py"


def test_a_python3_without_ctypes_leaves_the_capability_to_the_pci_ids() -> None:
    # Debian's python3-minimal has no ctypes; the probe's traceback made the node's facts
    # unreadable ("unexpected line from the CUDA probe") instead of falling back to PCI
    without = f"import sys; sys.modules['ctypes'] = None; exec(open({str(PROBE)!r}).read())"
    done = subprocess.run([sys.executable, "-I", "-c", without], capture_output=True,
                          text=True, timeout=60, check=False)
    probe = parse_cuda_probe(done.stdout + done.stderr)
    assert probe is not None and probe.failed_call == "libcuda", done.stdout + done.stderr
    assert probe.why is not None and "ctypes" in probe.why
    v100 = GpuInfo("470.182.03", (11, 4), (Gpu(0, "Tesla V100-SXM2-32GB", "GPU-0", 32510),),
                   mig=False)
    pci = parse_pci_gpus("0000:06:00.0 0x10de 0x1db5 0x030200")
    assert with_capabilities(v100, probe, pci).gpus[0].compute_capability == (7, 0)
