"""``nodeprov run --sync`` next to ``scp -r``: the same 20 MB code folder (2,000 small text files
and one 4 MB binary) to 2 and to 8 fresh testbed nodes, against ``scp -r`` of it to one node,
in one run, side by side (issue 22: the sync at most 2x scp's time plus 3 s).

    sudo .venv/bin/python -m tests.bench.sync                   # 2 and 8 nodes, 3 repetitions
    sudo .venv/bin/python -m tests.bench.sync --nodes 2 --reps 1

The nodes first get their names and socket environment (``nodeprov apply`` of the tests' playbook,
not timed: torchrun's rendezvous needs them). Per repetition, on the same nodes, each into a
folder it has never seen: ``scp -r -q`` to node1
(OpenSSH's scp, its SFTP protocol; wall time), then ``nodeprov run --sync FOLDER --no-preflight
-- noop.py``: the sync's own time is what the run's JSON report gives each node (``sync_s``:
from the first read of the nodes' files to the node's last file received; the longest node's is
reported), the whole command's wall time beside it (SSH connections, facts, the sync, torchrun
starting a script that does nothing). torchrun comes from one venv under ROOT that the testbed
shares with its nodes (torch from the wheels under /opt, as the tests install it). Each timed
command waits for a quiet machine first. A table goes to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.bench.measure import median, timed
from tests.bench.run import _exit_on_sigterm, fresh_testbed, log

REPO = Path(__file__).resolve().parents[2]
FILES, FILE_BYTES, BINARY_BYTES = 2000, 8000, 4 << 20
PLAYBOOK = """- name: names and sockets for torchrun
  hosts: all
  tasks:
    - {name: Cluster names, hosts: {}}
    - {name: NCCL environment, nccl_env: {subnet: "{{ node_subnet }}"}}
"""
VENV_INSTALL = ("--no-index", "--find-links", "/opt/wheels", "--find-links", "/opt/pypi/files",
                "torch==2.13.0")


def code_folder(path: Path) -> Path:
    """The 20 MB folder: 2,000 files of Python-like text in 20 packages, one 4 MB binary."""
    words = random.Random(22)
    vocabulary = [f"name{i}" for i in range(400)] + ["=", "(", ")", ":", "def", "return"]
    for index in range(FILES):
        module = path / f"pkg{index % 20:02d}" / f"mod{index:04d}.py"
        module.parent.mkdir(parents=True, exist_ok=True)
        text = " ".join(words.choice(vocabulary) for _ in range(FILE_BYTES // 4))
        module.write_text(text[:FILE_BYTES - 1] + "\n")
    (path / "weights.bin").write_bytes(random.Random(4).randbytes(BINARY_BYTES))
    (path / "noop.py").write_text("pass\n")
    return path


def shared_venv(root: Path) -> Path:
    """A venv with torch under ROOT (the testbed shares it with its nodes), made once."""
    venv = (root / "sync-venv").resolve()  # shared by its real path
    if not (venv / "bin" / "torchrun").exists():
        log(f"sync bench: a torch venv in {venv} (once)")
        subprocess.run(["/usr/bin/python3", "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", *VENV_INSTALL], check=True)
    return venv


def bench(nodes: int, reps: int, root: Path, folder: Path, venv: Path) -> list[dict[str, Any]]:
    rows = []
    # nodes see nothing of this machine's but what is shared (testbed/nodeinit.py)
    with fresh_testbed(root / "sync-testbed", nodes, shared=[str(venv)]) as (bed, _, _):
        inventory = yaml.safe_load(bed.inventory_path.read_text())
        inventory["all"]["vars"]["venv_path"] = str(venv)
        path = root / "sync-inventory.yaml"
        path.write_text(yaml.safe_dump(inventory))
        playbook = root / "sync-playbook.yaml"
        playbook.write_text(PLAYBOOK)
        subprocess.run([sys.executable, "-m", "nodeprov", "apply", str(path), "-p", str(playbook)],
                       cwd=REPO, check=True, capture_output=True)
        for rep in range(1, reps + 1):
            source = Path("/tmp/nodeprov-bench-sync") / f"rep{rep}" / "code"
            shutil.rmtree(source.parent, ignore_errors=True)
            shutil.copytree(folder, source)  # the nodes' /tmp are their own: a fresh target
            scp = timed(["scp", "-q", "-r", "-F", str(bed.ssh_config_path), str(source),
                         f"node1:/tmp/scp-rep{rep}"], own=None)
            written = root / "sync-report.json"
            written.unlink(missing_ok=True)
            run = timed([sys.executable, "-m", "nodeprov", "run", str(path), "--sync",
                         str(source), "--no-preflight", "--json", str(written), "--",
                         "noop.py"], own=None, cwd=REPO)
            report = json.loads(written.read_text()) if written.exists() else {}
            sync_s = max((node["sync_s"] or 0.0 for node in report.get("nodes", {}).values()),
                         default=float("nan"))
            ok = scp.exit_code == 0 and run.exit_code == 0
            log(f"  {nodes} nodes rep {rep}: scp -r {scp.wall_s:.2f} s; nodeprov sync "
                f"{sync_s:.2f} s (run {run.wall_s:.2f} s){'' if ok else '  FAILED'}")
            rows.append({"nodes": nodes, "rep": rep, "scp_s": scp.wall_s, "sync_s": sync_s,
                         "run_s": run.wall_s, "ok": ok,
                         "problem": "" if ok else (scp.output + run.output)[-2000:]})
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    """Medians per node count, side by side, with the target and whether it was met."""
    lines = ["| nodes | `scp -r` to 1 node | `nodeprov run --sync`: the sync | the whole run | "
             "target: 2 x scp + 3 s | met |", "| --- | --- | --- | --- | --- | --- |"]
    for nodes in sorted({row["nodes"] for row in rows}):
        mine = [row for row in rows if row["nodes"] == nodes and row["ok"]]
        if not mine:
            lines.append(f"| {nodes} | failed | | | | |")
            continue
        scp, sync = median([r["scp_s"] for r in mine]), median([r["sync_s"] for r in mine])
        target = 2 * scp + 3
        lines.append(f"| {nodes} | {scp:.2f} s | {sync:.2f} s | "
                     f"{median([r['run_s'] for r in mine]):.2f} s | {target:.2f} s | "
                     f"{'yes' if sync <= target else 'NO'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--nodes", default="2,8", help="comma-separated node counts")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--root", type=Path, default=Path("/srv/nodeprov-bench"))
    parser.add_argument("--json", type=Path, help="also write every sample here")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)  # so the testbed still comes down
    folder = code_folder(args.root / "sync-folder" / "code") if not (
        args.root / "sync-folder" / "code" / "noop.py").exists() else (
        args.root / "sync-folder" / "code")
    size = sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())
    log(f"sync bench: {len(list(folder.rglob('*.py')))} files, {size / 1e6:.1f} MB")
    venv = shared_venv(args.root)
    rows = [row for nodes in args.nodes.split(",")
            for row in bench(int(nodes), args.reps, args.root, folder, venv)]
    print(f"the folder: {FILES} files of {FILE_BYTES} bytes and one of {BINARY_BYTES} bytes "
          f"({size / 1e6:.1f} MB); medians of {args.reps} repetitions\n")
    print(table(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0 if all(row["ok"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
