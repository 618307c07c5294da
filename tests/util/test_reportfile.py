"""reportfile: a report's path is checked before the run and the file written after it, private
(0600), atomically, never through a symlink (issue #23 point 7)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nodeprov.errors import InputError
from nodeprov.util.reportfile import ReportNotWritten, checked_target, write_private


def test_stdout_and_a_new_or_existing_file_pass(tmp_path: Path) -> None:
    assert checked_target("-", option="--json") == "-"
    assert checked_target(str(tmp_path / "new.json"), option="--json") == str(
        tmp_path / "new.json")
    (tmp_path / "old.json").write_text("{}")
    assert checked_target(str(tmp_path / "old.json"), option="--json")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["old.json"]  # probe removed


@pytest.mark.parametrize(("path", "shown"), [
    ("", "''"), ("a\x01b.json", "'a\\x01b.json'"), ("a\nb.json", "'a\\nb.json'")])
def test_a_path_a_message_would_misread_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                    path: str, shown: str) -> None:
    # --json "" said "--json:  is not a regular file"; a control character was taken
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError) as refused:
        checked_target(path, option="--json")
    assert str(refused.value) == (f"--json: {shown} is no file name for a report: give a path "
                                  "without control characters, or - for stdout")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("kind", ["symlink", "fifo", "folder", "dangling symlink"])
def test_what_is_not_a_plain_file_path_is_refused_naming_the_option(tmp_path: Path,
                                                                    kind: str) -> None:
    path = tmp_path / "report"
    if kind == "symlink":
        (tmp_path / "target").write_text("")
        path.symlink_to(tmp_path / "target")
    elif kind == "dangling symlink":
        path.symlink_to(tmp_path / "nowhere")
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    with pytest.raises(InputError, match=f"^--html: {path} is (a symlink|not a regular file)"):
        checked_target(str(path), option="--html")


def test_an_unwritable_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--json: cannot write .*No such file or directory"):
        checked_target(str(tmp_path / "gone" / "r.json"), option="--json")


def test_the_report_replaces_the_old_file_whole_with_mode_0600(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text("old\n")
    path.chmod(0o644)
    write_private(str(path), "new\n")
    assert path.read_text() == "new\n" and path.stat().st_mode & 0o777 == 0o600


def test_a_folder_gone_after_the_check_is_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "reports"
    folder.mkdir()
    checked_target(str(folder / "r.json"), option="--json")
    folder.rmdir()
    with pytest.raises(ReportNotWritten, match=f"^the report could not be written to {folder}/"
                                               "r.json: No such file or directory$"):
        write_private(str(folder / "r.json"), "{}\n")
