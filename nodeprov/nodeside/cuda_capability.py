"""Print each CUDA device's compute capability from the driver API: facts.sh runs this on a node
whose nvidia-smi predates the ``compute_cap`` query field (drivers before 510)::

    $ python3 cuda_capability.py
    device 0 7.0
    device 1 7.0

or one line saying why it cannot: ``error libcuda <why>``, ``error cuInit <code>``. Devices come
in PCI bus order, as nvidia-smi lists them, all of them (CUDA_VISIBLE_DEVICES is ignored).
Python 3.8+, standard library only (ctypes): ``libcuda.so.1`` comes with every NVIDIA driver.
"""

import os
import sys

MAJOR, MINOR = 75, 76  # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR / _MINOR (cuda.h)
MAX_DEVICES = 64


def main() -> int:
    os.environ["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"  # read by cuInit
    os.environ.pop("CUDA_VISIBLE_DEVICES", None)
    try:
        import ctypes  # here, not above: Debian's python3-minimal has none, and then PCI decides

        cuda = ctypes.CDLL("libcuda.so.1")
    except (ImportError, OSError) as error:
        print("error libcuda " + " ".join(str(error).split())[:200])
        return 0
    status = cuda.cuInit(0)
    if status != 0:
        print(f"error cuInit {status}")
        return 0
    count = ctypes.c_int(0)
    status = cuda.cuDeviceGetCount(ctypes.byref(count))
    if status != 0:
        print(f"error cuDeviceGetCount {status}")
        return 0
    for ordinal in range(min(count.value, MAX_DEVICES)):
        device, major, minor = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_int(0)
        for call, args in (("cuDeviceGet", (ctypes.byref(device), ordinal)),
                           ("cuDeviceGetAttribute", (ctypes.byref(major), MAJOR, device)),
                           ("cuDeviceGetAttribute", (ctypes.byref(minor), MINOR, device))):
            status = getattr(cuda, call)(*args)
            if status != 0:
                print(f"error {call} {status}")
                return 0
        print(f"device {ordinal} {major.value}.{minor.value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
