"""The lines that set a new session's variables in pam_env's and sshd's files, read from
Linux-PAM's own example pam_env.conf (tests/data/pam-env)."""

from __future__ import annotations

from pathlib import Path

from nodeprov.tasks.textfiles.envfile import session_settings

EXAMPLE = (Path(__file__).parents[2] / "data" / "pam-env" / "pam_env.conf-example").read_text()
# its examples, each line's leading '#' taken off, as an admin turns one on
TURNED_ON = "\n".join(line[1:] if line[1:2].isupper() or line[1:2] == ":" else line
                      for line in EXAMPLE.split("\n"))


def test_linux_pams_own_pam_env_conf_sets_nothing() -> None:
    assert session_settings(EXAMPLE) == []


def test_its_examples_turned_on_are_read_as_pam_env_reads_them() -> None:
    found = session_settings(TURNED_ON)
    # PATH's second line (':/usr/bin:...') continues PATH's, after its '\'
    assert [name for _, name in found] == [
        "REMOTEHOST", "DISPLAY", "PAGER", "MANPAGER", "LESS", "NNTPSERVER", "PATH", "DOLLAR",
        "DOLLARDOLLAR", "DOLLARPLUS", "ATSIGN"]
    lines = TURNED_ON.split("\n")
    assert all(lines[number - 1].startswith(name) for number, name in found)
