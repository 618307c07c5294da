"""The order a boot applies sysctl files in, and the later lines that would undo ours."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nodeprov.tasks.textfiles.sysctl_conf import boot_settings, overriding
from tests.checks.drift.printed import printed_commands

DEBIAN_SYSCTL = (Path(__file__).parents[1] / "data" / "ipv6-sysctl-debian12.conf").read_text()
RANGE = "net.ipv4.ip_local_port_range"


def test_boot_order_is_by_name_across_folders_the_first_folder_shadowing_and_conf_last() -> None:
    found = {
        "/usr/lib/sysctl.d/50-default.conf": f"{RANGE} = 1024 65000\n",
        "/usr/lib/sysctl.d/99-cloud.conf": f"# vendor\n{RANGE} = 2000 3000\n",
        "/etc/sysctl.d/99-cloud.conf": "# shadows the vendor's file of the same name\n",
        "/run/sysctl.d/60-run.conf": f"-{RANGE}=40000 50000\n",
        "/etc/sysctl.conf": DEBIAN_SYSCTL + f"{RANGE}=45000 46000\n",
        # Debian's link to /etc/sysctl.conf: the same lines, read once, as that file
        "/etc/sysctl.d/99-sysctl.conf": DEBIAN_SYSCTL + f"{RANGE}=45000 46000\n",
    }
    last = DEBIAN_SYSCTL.count("\n") + 1
    assert boot_settings(found, RANGE) == [
        ("/usr/lib/sysctl.d/50-default.conf", 1, "1024 65000"),
        ("/run/sysctl.d/60-run.conf", 1, "40000 50000"),
        ("/etc/sysctl.conf", last, "45000 46000")]


def test_only_later_files_setting_another_value_conflict_sysctl_conf_left_to_the_task() -> None:
    ours = "/etc/sysctl.d/90-nodeprov.conf"
    found = {ours: "net.core.somaxconn = 8192\n",
             "/etc/sysctl.d/10-early.conf": "net.core.somaxconn = 1\n",
             "/etc/sysctl.d/95-same.conf": "net.core.somaxconn=8192\n",
             "/usr/lib/sysctl.d/95-late.conf": "\n\nnet.core.somaxconn = 512\n",
             "/etc/sysctl.conf": "net.core.somaxconn = 128\n"}
    assert overriding(found, ours, {"net.core.somaxconn": "8192"}, "the setting") == [
        f"/usr/lib/sysctl.d/95-late.conf:3 'net.core.somaxconn = 512' is applied after {ours} "
        "at boot, so the setting would not stay as asked: comment it out: sed -i "
        "'/^net\\.core\\.somaxconn = 512$/s/^/# /' /usr/lib/sysctl.d/95-late.conf"]


@pytest.mark.parametrize("text", [
    "net.core.rmem_max = 1\r\n",  # a file written on Windows: sed keeps the "\r"
    "# a form feed \x0c here\nnet.core.rmem_max = 1\n",  # one line to sed, two to splitlines
    "kernel.x = 1\u2028\nnet.core.rmem_max = 1\n"])
def test_the_printed_sed_finds_its_line_as_sed_counts_and_reads_it(
        tmp_path: Path, text: str) -> None:
    """The conflict's file:line is sed's, and its command leaves the next boot nothing that
    sets the key otherwise (before: a CRLF line got a pattern without its "\\r", which GNU
    sed matches nowhere, exiting 0; a form feed moved every later number by one)."""
    cloud, own, key = "/etc/sysctl.d/99-zzz-cloud.conf", "/etc/sysctl.d/90-nodeprov.conf", \
        "net.core.rmem_max"
    [item] = overriding({own: "", cloud: text}, own, {key: "2"}, "the setting")
    path = tmp_path / "cloud.conf"
    path.write_bytes(text.encode())
    number = item.partition(" ")[0].removeprefix(f"{cloud}:")
    assert subprocess.run(["sed", "-n", f"{number}p", str(path)], capture_output=True,
                          check=True).stdout.rstrip(b"\r\n") == b"net.core.rmem_max = 1"
    [command] = printed_commands(item)
    subprocess.run(["sh", "-c", command.replace(cloud, str(path))], check=True)
    assert boot_settings({own: "", cloud: path.read_bytes().decode()}, key) == []
