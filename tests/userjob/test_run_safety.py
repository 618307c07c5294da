"""``nodeprov run`` on the shared run testbed (tests/userjob/conftest.py), what it moves and as
whom: ``--sync`` at the link's speed, never through a link planted on a node nor into what
another user could write; the job as the login user unless the inventory says ``run_as_root``,
its ``--env`` values on no command line; a node cut off from nodeprov stops its job by
itself."""

from __future__ import annotations

import io
import os
import re
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from runbed import leftovers, nodeprov_run

from nodeprov.job import nodejob
from nodeprov.job.nodejob import Job, launch_all
from nodeprov.testbed.cluster import Testbed
from tests.proof.test_connectivity import open_sessions

pytestmark = pytest.mark.integration

ADD_ALICE = """id alice >/dev/null 2>&1 || useradd -m -s /bin/sh alice
echo "alice:$1" | chpasswd
echo "alice ALL=(ALL:ALL) ALL" > /etc/sudoers.d/alice && chmod 440 /etc/sudoers.d/alice
install -d -o alice -g alice -m 700 /home/alice/.ssh
install -o alice -g alice -m 600 /root/.ssh/authorized_keys /home/alice/.ssh/
"""
PASSWORD = "Alice-Pw-4c1e"  # noqa: S105 - the test's own
WHO = """import os, pwd, sys
secret = os.environ["RUN_SECRET"]
shown = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as argv:
            shown += [pid] if secret.encode() in argv.read() else []
    except OSError:
        pass
print("user", pwd.getpwuid(os.getuid()).pw_name, "secret", len(secret), "in argv", len(shown))
"""


def test_megabytes_go_at_the_links_speed(run_bed: Testbed, code_dir: Path) -> None:
    """4 MB in 401 files (invoke's stdin pump, a byte per 10 ms, took 95 s for 8 KB)."""
    for index in range(400):
        (code_dir / "pkg" / f"m{index % 10}").mkdir(parents=True, exist_ok=True)
        (code_dir / "pkg" / f"m{index % 10}" / f"f{index}.py").write_text(f"x = {index}\n" * 700)
    (code_dir / "weights.bin").write_bytes(os.urandom(1 << 20))
    started = time.monotonic()
    code, report, shown = nodeprov_run(run_bed, code_dir, "--steps", "1",
                                       options=("--no-preflight",))
    took = time.monotonic() - started
    assert code == 0, shown
    sync_s = max(node["sync_s"] for node in report["nodes"].values())
    sent = sum(path.stat().st_size for path in code_dir.rglob("*") if path.is_file())
    print(f"\n--sync of {sent / 1e6:.1f} MB in {len(list(code_dir.rglob('*.py')))} files to 3 "
          f"nodes: {sync_s:.1f} s ({sent / sync_s / 1e6:.1f} MB/s per node); the run {took:.1f} s")
    assert all(node["synced"] == 402 for node in report["nodes"].values())
    assert re.search(r"^sync: 402 files \(3\.\d MB\) to 3 of 3 nodes in \d+\.\d s$", shown, re.M)
    assert sync_s < 20


def test_sync_refuses_a_planted_link_or_file_and_starts_nothing(
        run_bed: Testbed, code_dir: Path) -> None:
    (code_dir / "conf").mkdir()
    (code_dir / "conf" / "evil").write_text("* * * * * root touch /tmp/pwned\n")
    planted = code_dir / "conf"
    run_bed.exec("node2", "sh", "-c", 'mkdir -p "$1" && ln -s /etc/cron.d "$2"', "plant",
                 str(code_dir), str(planted), check=True)
    try:
        code, report, shown = nodeprov_run(run_bed, code_dir, "--steps", "1")
        assert code == 1 and report["refused"], shown
        assert report["diagnosis"] == [
            f"node2: sync: {planted} is a symbolic link on the node; nodeprov writes through "
            "none (give the real path, or remove the link)"]
        assert report["verdict"] == f"FAIL: not started: {report['diagnosis'][0]}"
        assert run_bed.exec("node2", "ls", "/etc/cron.d").stdout.split().count("evil") == 0
        run_bed.exec("node2", "sh", "-c", 'rm "$1" && echo "print(1)" > "$2" && chown nobody '
                     '"$2"', "plant", str(planted), str(code_dir / "torch.py"), check=True)
        code, report, shown = nodeprov_run(run_bed, code_dir, "--steps", "1")
        assert code == 1 and report["diagnosis"] == [
            f"node2: sync: {code_dir}/torch.py belongs to nobody, not to the job's user or "
            "root: someone else could have put a file there that the job would run"]
        assert "[rank0]" not in shown and leftovers(run_bed) == {}
    finally:
        run_bed.exec("node2", "rm", "-rf", str(code_dir))


@pytest.mark.skipif(shutil.which("sudo") is None, reason="needs sudo on this machine (the "
                    "testbed's nodes share its /usr)")
def test_the_job_runs_as_the_login_user_unless_the_inventory_says_root(
        run_bed: Testbed, tmp_path: Path) -> None:
    for name in run_bed.nodes:
        run_bed.exec(name, "sh", "-c", ADD_ALICE, "add", PASSWORD, check=True)
    # where alice may write on the nodes: a folder of her own in /tmp
    code_dir = Path(tempfile.mkdtemp(prefix="nodeprov-alice-", dir="/tmp")) / "train"
    code_dir.mkdir()
    (code_dir / "train.py").write_text(WHO)
    inventory = yaml.safe_load(run_bed.inventory_path.read_text())
    inventory["all"]["vars"].update(ansible_user="alice", ansible_become=True,
                                    ansible_become_password=PASSWORD)
    as_alice = tmp_path / "alice.yaml"
    as_alice.write_text(yaml.safe_dump(inventory))
    inventory["all"]["vars"]["run_as_root"] = True
    as_root = tmp_path / "root.yaml"
    as_root.write_text(yaml.safe_dump(inventory))
    os.environ["RUN_SECRET"] = "s3cret-9a8b"  # --env RUN_SECRET passes this machine's value
    try:
        for path, user in ((as_alice, "alice"), (as_root, "root")):
            code, report, shown = nodeprov_run(run_bed, code_dir, inventory=path,
                                               options=("--env", "RUN_SECRET", "--no-preflight"))
            assert code == 0, shown
            logs = "".join(Path(node["log"]).read_text() for node in report["nodes"].values())
            assert logs.count(f"user {user} secret 11 in argv 0") == 3, logs
            assert "s3cret" not in shown + logs and PASSWORD not in shown + str(report)
            owner = run_bed.exec("node1", "stat", "-c", "%U", str(code_dir / "train.py")).stdout
            assert owner.strip() == user
            assert leftovers(run_bed, runs=f"~{user}/.cache/nodeprov/job") == {}
            for name in run_bed.nodes:  # the next user's own copy
                run_bed.exec(name, "rm", "-rf", str(code_dir))
    finally:
        del os.environ["RUN_SECRET"]
        for name in run_bed.nodes:
            run_bed.exec(name, "rm", "-rf", str(code_dir.parent))
        shutil.rmtree(code_dir.parent)


def test_a_node_cut_off_from_nodeprov_stops_its_job_by_itself(
        run_bed: Testbed, monkeypatch: pytest.MonkeyPatch) -> None:
    """No FIN reaches the node (a cable pulled): no EOF either. The heartbeats stop, and the
    node stops the job QUIET s later (here 4 s instead of 60), freeing the lock."""
    monkeypatch.setattr(nodejob, "QUIET", 4.0)
    _hosts, sessions, _facts = open_sessions(run_bed)
    job = Job("nodeprov-run-cut", {"node1": ["sleep", "300"]}, 0)
    done: dict[str, Any] = {}
    running = threading.Thread(target=lambda: done.update(launch=launch_all(
        ["node1"], {"node1": sessions["node1"]}, job,
        streams={"node1": (io.StringIO(), io.StringIO())})))
    running.start()
    cut = ["-p", "tcp", "--dport", "22", "-j", "DROP"]
    try:
        for _ in range(200):
            if run_bed.exec("node1", "pgrep", "-f", "sleep 300").stdout:
                break
            time.sleep(0.1)
        run_bed.exec("node1", "iptables", "-I", "INPUT", *cut, check=True)
        gone = time.monotonic()
        for _ in range(300):
            if not run_bed.exec("node1", "pgrep", "-f", "sleep 300").stdout:
                break
            time.sleep(0.1)
        took = time.monotonic() - gone
        print(f"\nnode cut off: its job stopped {took:.1f} s after the cut (QUIET 4 s)")
        assert 3 < took < 10
        assert leftovers(run_bed) == {}
    finally:
        run_bed.exec("node1", "iptables", "-D", "INPUT", *cut)
        running.join(timeout=120)
        for session in sessions.values():
            session.close()
    note = run_bed.exec("node1", "cat", "/var/lib/nodeprov/job/last-stopped.json").stdout
    assert "nodeprov sent no heartbeat for 4 s" in note
    run_bed.exec("node1", "rm", "-f", "/var/lib/nodeprov/job/last-stopped.json")
