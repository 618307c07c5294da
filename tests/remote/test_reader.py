"""The file reader gives back every file's text byte for byte, whatever the file holds."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pytest

from nodeprov.remote import reader


def read(*paths: str | Path, user: Sequence[str] = ()) -> dict[str, str | None]:
    """What ``read_many_probe`` reads of these paths, as ``user`` (a setpriv prefix) if given."""
    argv = [*user, *reader.read_many_probe(*map(str, paths)).argv]
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    return reader.observed_files(done.stdout)


def test_texts_come_back_byte_for_byte(tmp_path: Path) -> None:
    texts = {"plain": "a\nb\n", "no-final-newline": "a\nb", "empty": "", "newlines": "\n\n",
             "nul": "x\0y\0", "utf8": "café ✓\n",
             # lines that look like the probe's own: a header, a status line, the old marker
             "lookalike": f"==> {tmp_path}/plain <==\nread {tmp_path}/plain\n==> /.//x <==\n"
                          "\n@@nodeprov-file /etc/hosts\n@@nodeprov-absent@@"}
    for name, text in texts.items():
        (tmp_path / name).write_bytes(text.encode())
    found = read(*(tmp_path / name for name in texts), "/proc/sys/kernel/ostype")
    assert found == {**{str(tmp_path / name): text for name, text in texts.items()},
                     "/proc/sys/kernel/ostype": "Linux\n"}


def test_absent_globs_directories_and_order(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "b.cfg").write_text("b")
    (tmp_path / "d" / "a.cfg").write_text("")
    (tmp_path / "d" / "c.txt").write_text("not matched")
    (tmp_path / "d" / "sub.cfg").mkdir()
    (tmp_path / "d" / "dangling.cfg").symlink_to(tmp_path / "gone")
    (tmp_path / "d" / "new\nline.cfg").write_text("skipped: its name would end its line")
    found = read(tmp_path / "missing", f"{tmp_path}/d/*.cfg", f"{tmp_path}/none/*.cfg",
                 f"{tmp_path}/d/*.none", tmp_path / "d")
    assert list(found.items()) == [
        (f"{tmp_path}/missing", None), (f"{tmp_path}/d/a.cfg", ""), (f"{tmp_path}/d/b.cfg", "b"),
        (f"{tmp_path}/d/sub.cfg", ""), (f"{tmp_path}/d", "")]  # directories read as empty
    assert read() == {}


def test_an_unreadable_file_reads_as_empty(tmp_path: Path) -> None:
    folder = Path(tempfile.mkdtemp(dir="/tmp"))  # tmp_path's parents are closed to others
    try:
        folder.chmod(0o755)
        (folder / "secret").write_text("x")
        (folder / "secret").chmod(0)
        (folder / "open").write_text("y")
        (folder / "open").chmod(0o644)
        user: list[str] = []
        if os.geteuid() == 0:  # root reads anything: read as nobody
            if not shutil.which("setpriv"):
                pytest.skip("needs util-linux setpriv when run as root")
            user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        found = read(folder / "secret", folder / "open", user=user)
        assert found == {f"{folder}/secret": "", f"{folder}/open": "y"}
        output = subprocess.run([*user, *reader.read_many_probe(f"{folder}/secret").argv],
                                capture_output=True, text=True, check=True).stdout
        assert reader.observed_files(output, unreadable=None) == {f"{folder}/secret": None}
    finally:
        shutil.rmtree(folder)


def test_each_probe_spells_root_anew_and_the_writer_matches_the_reader() -> None:
    first, second = (reader.read_args("/etc/hosts")[0] for _ in range(2))
    # samefile, not normpath: POSIX normpath keeps a leading "//", which Linux reads as "/"
    assert first != second and os.path.samefile(first, "/")
    assert set(first.split("/")) <= {"", "."}
    found = {"/etc/hosts": "127.0.0.1 localhost\n", "/etc/none": None, "/etc/empty": "",
             "/etc/x y": "no final newline"}
    assert reader.observed_files(reader.files_output(found, root=first)) == found
