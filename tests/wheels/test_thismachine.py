"""What this machine does for the nodes: once per run whoever asks, from the inventory's
sources, else its own pip configuration, else the defaults; for real with pip against a folder
mirror of stand-in wheels."""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path

import pytest

from nodeprov.wheels.pipconfig import NodePip, node_pip
from nodeprov.wheels.resolve import Pinned, requirements
from nodeprov.wheels.sources import Sources
from nodeprov.wheels.thismachine import Once, ThisMachine, WheelSet
from nodeprov.wheels.wheelhouse import DownloadFailed
from tests.wheels.mirror import simple_index, stand_in

DEFAULT = ("--index-url", "https://download.pytorch.org/whl/cpu")
UNCONFIGURED = NodePip(Sources(), (), "this machine's")


def test_once_runs_each_key_once_and_gives_every_caller_its_result_or_its_error() -> None:
    once: Once[int] = Once()
    calls: list[str] = []

    def slow(key: str) -> int:
        calls.append(key)
        time.sleep(0.1)  # the other threads arrive while it runs
        if key == "bad":
            raise DownloadFailed("no index")
        return len(calls)

    got: list[object] = []

    def ask(key: str) -> None:
        try:
            got.append(once.get(key, lambda: slow(key)))
        except DownloadFailed as error:
            got.append(str(error))

    threads = [threading.Thread(target=ask, args=(key,)) for key in ["good"] * 8 + ["bad"] * 8]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(calls) == ["bad", "good"]
    assert got.count("no index") == 8 and len([g for g in got if isinstance(g, int)]) == 8
    assert len({g for g in got if isinstance(g, int)}) == 1


def test_the_inventorys_sources_else_this_machines_pip_configuration_else_the_default() -> None:
    mirror = Sources(index_url="https://ci:s3cret@mirror.example/simple", find_links=("/w",))
    wanted = WheelSet(("--no-deps",), ("uv==0.13.9",), mirror, DEFAULT)
    configured = node_pip({"/etc/pip.conf": "[global]\nfind-links = /srv/w\n"}, {},
                          "this machine's")
    assert ThisMachine(lambda: configured).sources(wanted) == (
        ("--index-url", "https://ci:s3cret@mirror.example/simple", "--find-links", "/w"),
        "/w, https://ci:***@mirror.example/simple")
    unnamed = WheelSet(("--no-deps",), ("uv==0.13.9",), Sources(), DEFAULT)
    assert ThisMachine(lambda: configured).sources(unnamed) == (
        (), "this machine's pip configuration (/etc/pip.conf)")
    assert ThisMachine(lambda: UNCONFIGURED).sources(unnamed) == (
        DEFAULT, "https://download.pytorch.org/whl/cpu")


@pytest.fixture
def mirror(tmp_path: Path) -> str:
    return simple_index(tmp_path / "mirror", [
        stand_in("nodeprov-tiny", "1.0", requires=["nodeprov-dep>=2"]),
        stand_in("nodeprov-dep", "2.0"), stand_in("nodeprov-dep", "1.0")])


def test_a_fill_downloads_from_the_named_mirror_once(mirror: str, tmp_path: Path) -> None:
    here = ThisMachine(lambda: UNCONFIGURED)
    wanted = WheelSet(("--python-version", "3.11"), ("nodeprov-tiny",),
                      Sources(index_url=mirror), DEFAULT)
    folder = tmp_path / "wheelhouse"
    assert here.fill(str(folder), wanted) == mirror
    assert sorted(path.name for path in folder.glob("*.whl")) == [
        "nodeprov_dep-2.0-py3-none-any.whl", "nodeprov_tiny-1.0-py3-none-any.whl"]
    absent = WheelSet(("--python-version", "3.11"), ("nodeprov-absent==1",),
                      Sources(index_url=mirror), DEFAULT)
    with pytest.raises(DownloadFailed, match=f"^from {mirror}: No matching distribution found "
                                             "for nodeprov-absent==1$"):
        here.fill(str(tmp_path / "other"), absent)


def test_pins_are_the_files_pip_would_install_with_the_index_sha256(
        mirror: str, tmp_path: Path) -> None:
    here = ThisMachine(lambda: UNCONFIGURED)
    wanted = WheelSet(("--python-version", "3.11", "--implementation", "cp"), ("nodeprov-tiny",),
                      Sources(index_url=mirror), DEFAULT)
    pins = here.pins(wanted)
    files = tmp_path / "mirror" / "files"
    assert sorted(pins, key=lambda pin: pin.name) == [
        Pinned("nodeprov-dep", "2.0", "nodeprov_dep-2.0-py3-none-any.whl",
               hashlib.sha256((files / "nodeprov_dep-2.0-py3-none-any.whl").read_bytes()
                              ).hexdigest()),
        Pinned("nodeprov-tiny", "1.0", "nodeprov_tiny-1.0-py3-none-any.whl",
               hashlib.sha256((files / "nodeprov_tiny-1.0-py3-none-any.whl").read_bytes()
                              ).hexdigest())]
    assert requirements(pins[:1]).endswith(f" --hash=sha256:{pins[0].sha256}\n")
    assert here.pins(wanted) is pins  # once per run
