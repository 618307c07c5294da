"""This machine's wheelhouse: one download for many hosts, pip's output kept out of the nodes'
reach with its credentials masked, and pip's own reason when it fails."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from nodeprov.wheels import wheelhouse


def test_one_download_for_many_hosts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[list[str]] = []

    def fake_pip(argv: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        calls.append(argv)
        time.sleep(0.2)  # the other threads arrive while this download runs
        return subprocess.CompletedProcess(argv, 0, "Saved torch\n", "")

    monkeypatch.setattr(subprocess, "run", fake_pip)
    args = ["download", "--", "torch==2.13.0+cpu"]
    threads = [threading.Thread(target=wheelhouse.fetch, args=(tmp_path, args))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert calls == [[sys.executable, "-m", "pip", "download", "--dest", str(tmp_path), "--",
                      "torch==2.13.0+cpu"]]
    assert (tmp_path / wheelhouse.LOG_NAME).read_text().count("pip exited 0") == 1
    assert not wheelhouse.fetch(tmp_path, args)  # done before: not again
    assert wheelhouse.fetch(tmp_path, [*args, "six"])  # another set of wheels: download


def test_a_failed_download_says_pips_reason_and_its_log_hides_credentials(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def offline(argv: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(argv, 1, "Looking in indexes: https://ci:****@m/s\n",
                                           "ERROR: Could not find a version that satisfies the "
                                           "requirement uv==0.13.9 (from versions: none)\n"
                                           "ERROR: No matching distribution found for "
                                           "uv==0.13.9\n")

    monkeypatch.setattr(subprocess, "run", offline)
    args = ["download", "--index-url", "https://ci:s3cret@m/s", "--", "uv==0.13.9"]
    with pytest.raises(wheelhouse.DownloadFailed,
                       match="^No matching distribution found for uv==0.13.9$"):
        wheelhouse.fetch(tmp_path, args)
    log = (tmp_path / wheelhouse.LOG_NAME).read_text()
    assert "https://ci:***@m/s" in log and "s3cret" not in log
    assert wheelhouse.LOG_NAME.startswith(".")  # never uploaded, never served
    assert [path.name for path in tmp_path.iterdir() if not path.name.startswith(".")] == []
    # not marked done: the next run tries again
    assert not list(tmp_path.glob(".done-*"))


def test_manylinux_platforms() -> None:
    assert wheelhouse.manylinux_platforms((2, 17), "aarch64") == (
        "manylinux_2_17_aarch64", "manylinux2014_aarch64")


def test_an_earlier_versions_log_is_removed_before_the_folder_is_sent(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "fetch.log").write_text("pip download --index-url https://ci:s3cret@m/s\n")
    monkeypatch.setattr(subprocess, "run", lambda argv, **_: subprocess.CompletedProcess(
        argv, 0, "", ""))
    wheelhouse.fetch(tmp_path, ["download", "--", "six"])
    assert not (tmp_path / "fetch.log").exists()
