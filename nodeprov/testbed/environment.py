"""What a testbed needs from this machine, checked before anything is touched.

    >>> problems()  # as root on Linux with the tools installed
    []
    >>> require()   # raises EnvironmentProblem (exit 2) naming every missing piece
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from nodeprov.errors import EnvironmentProblem

# The Debian package providing each tool.
TOOLS = {
    "ip": "iproute2",
    "nsenter": "util-linux",
    "unshare": "util-linux",
    "setsid": "util-linux",
    "ssh": "openssh-client",
    "ssh-keygen": "openssh-client",
    "sshd": "openssh-server",
}
SSHD_FALLBACK = "/usr/sbin/sshd"  # a non-root PATH often lacks /usr/sbin
NAMESPACE_PROBE = ["unshare", "--net", "--mount", "--uts", "--ipc", "--pid", "--fork", "true"]


def sshd_path() -> str | None:
    """sshd's absolute path (it re-executes itself, so it must be started by one)."""
    found = shutil.which("sshd")
    if found:
        return found
    return SSHD_FALLBACK if os.access(SSHD_FALLBACK, os.X_OK) else None


def _missing_tools() -> list[str]:
    return [tool for tool in TOOLS
            if (sshd_path() if tool == "sshd" else shutil.which(tool)) is None]


def _overlay_supported() -> bool:
    try:
        return "overlay" in Path("/proc/filesystems").read_text().split()
    except OSError:
        return False


def _namespace_problem() -> str | None:
    probe = subprocess.run(NAMESPACE_PROBE, capture_output=True, text=True)
    if probe.returncode == 0:
        return None
    return f"cannot create namespaces here ({probe.stderr.strip() or probe.returncode})"


def problems() -> list[str]:
    """Everything that keeps this machine from hosting a testbed, each a phrase saying the fix."""
    if sys.platform != "linux":
        return ["Linux is needed (network, mount and PID namespaces)"]
    found = []
    if os.geteuid() != 0:
        found.append("root is needed (run it with sudo)")
    sshd = sshd_path()
    if sshd and not os.path.realpath(sshd).startswith("/usr/"):
        found.append(f"sshd is {os.path.realpath(sshd)}, outside /usr, the one tree of this "
                     "machine's programs the nodes see (apt-get install openssh-server)")
    missing = _missing_tools()
    if missing:
        packages = sorted({TOOLS[tool] for tool in missing})
        found.append(f"{', '.join(missing)} not found on PATH "
                     f"(apt-get install {' '.join(packages)})")
    if not _overlay_supported():
        found.append("the kernel has no overlayfs (modprobe overlay)")
    if not found:
        namespaces = _namespace_problem()
        if namespaces:
            found.append(namespaces)
    return found


def require() -> None:
    """Raise EnvironmentProblem (exit 2) unless this machine can host a testbed."""
    found = problems()
    if found:
        raise EnvironmentProblem("testbed: " + "; ".join(found))
