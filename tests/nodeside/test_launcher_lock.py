"""The job lock's holder named by the kernel (issue #34): anyone may bind ``@nodeprov-job``,
and the admin was shown a squatter's own words ("run ... of root from 10.0.0.1 ... stops by
itself within a minute") as if they were facts. Now the launcher says only that the node is
busy, and lockholder.py names the holder: the kernel's pid, uid, user and command first, the
squatter's words only as its claim, quoted and escaped."""

from __future__ import annotations

import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest

from tests.nodeside.test_launcher import holder_in, run_id, start_argv, step, within

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the squatter is "
                                "another user, the launcher root, each namespace its own")
LIAR = ("run nodeprov-1 of root from 10.0.0.1 since 2026-01-01T00:00:00Z; its nodeprov was "
        "last heard 0 s ago; stops by itself within a minute\x1b[2J\u202e")
SQUATTER = f"""import socket, sys, time
held = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
held.bind(b"\\0nodeprov-job")
print("bound", flush=True)
if sys.argv[1] == "answers":
    held.listen(1)
    while True:
        peer, _ = held.accept()
        peer.sendall({LIAR!r}.encode())
        peer.close()
time.sleep(600)
"""


@pytest.mark.parametrize("kind", ["answers", "silent"])
def test_a_squatter_of_another_uid_is_named_by_the_kernel(tmp_path: Path, kind: str) -> None:
    state = tmp_path / "state"
    run = run_id(tmp_path)
    step("prepare", state, run)
    nobody = pwd.getpwnam("nobody")
    with subprocess.Popen(["unshare", "--net", "--", "setpriv", f"--reuid={nobody.pw_uid}",
                           f"--regid={nobody.pw_gid}", "--clear-groups", sys.executable,
                           "-I", "-c", SQUATTER, kind], stdout=subprocess.PIPE,
                          text=True) as squatter:
        try:
            assert squatter.stdout is not None and squatter.stdout.readline() == "bound\n"
            assert within(5, lambda: os.readlink(f"/proc/{squatter.pid}/ns/net")
                          != os.readlink("/proc/self/ns/net"))
            busy = subprocess.run(start_argv(state, run, "true", netns=squatter.pid),
                                  capture_output=True, text=True, timeout=30, check=False)
            said = holder_in(squatter.pid)
        finally:
            squatter.kill()
    assert busy.returncode == 75, busy.stderr
    assert busy.stderr.splitlines()[-1] == "another nodeprov job is running on this node"
    assert said.startswith(f"pid {squatter.pid} of nobody (uid {nobody.pw_uid}): "
                           f"{sys.executable} -I -c <"), said
    if kind == "answers":  # its words as its claim, every escape and bidi mark spelled out
        assert said.endswith(f' {kind}; it says: "run nodeprov-1 of root from 10.0.0.1 since '
                             '2026-01-01T00:00:00Z; its nodeprov was last heard 0 s ago; stops '
                             'by itself within a minute\\u001b[2J\\u202e"'), said
    else:
        assert said.endswith(f" {kind}; it does not answer: a job whose launcher ended, or not "
                             "a nodeprov launcher"), said
