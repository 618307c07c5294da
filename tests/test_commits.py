"""Every commit since this rule began has a subject of at most 72 characters, so that
``git log --oneline`` reads (docs/development.md, "Commits and modules"); merge commits too.

Skipped outside a git checkout (an sdist, a wheel's tests) and where ``SINCE`` is not an
ancestor of HEAD (a shallow clone, a branch older than the rule).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
SINCE = "38e9bb9"  # the last commit before the rule; every later one keeps it
MAX_SUBJECT = 72


def git(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(ROOT), *argv], capture_output=True, text=True)


def too_long(log: str) -> list[str]:
    """"hash: subject (N characters)" for each line of ``git log --format=%h %s`` whose
    subject is over MAX_SUBJECT."""
    found = []
    for line in log.splitlines():
        commit, _, subject = line.partition(" ")
        if len(subject) > MAX_SUBJECT:
            found.append(f"{commit}: {subject[:MAX_SUBJECT - 3]}... ({len(subject)} characters)")
    return found


def test_a_subject_of_73_characters_is_too_long_and_72_is_not() -> None:
    log = f"abc1234 {'a' * 72}\nbcd2345 Merge branch 'x' into main\ncde3456 {'b' * 73}\n"
    assert too_long(log) == [f"cde3456: {'b' * 69}... (73 characters)"]


def test_every_commit_since_the_rule_has_a_short_subject() -> None:
    if shutil.which("git") is None or git("rev-parse", "--git-dir").returncode:
        pytest.skip("not a git checkout")
    if git("merge-base", "--is-ancestor", SINCE, "HEAD").returncode:
        pytest.skip(f"{SINCE} is not an ancestor of HEAD here (a shallow or older checkout)")
    log = git("log", "--format=%h %s", f"{SINCE}..HEAD")
    assert log.returncode == 0, log.stderr
    assert not too_long(log.stdout), "\n".join(too_long(log.stdout))
