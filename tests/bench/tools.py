"""The three tools as the benchmark runs them: their venvs, command lines, and what they report.

    tools = [Nodeprov(), Ansible(venvs), Pyinfra(venvs)]
    for tool in tools:
        tool.prepare(bed, work)
        command = tool.command(bed, work, phase="first", network_only=True)
        ...run it...
        outcome = tool.outcome(work, "first", output, exit_code, nodes=len(bed.nodes))
        tool.cleanup(work)

Ansible and pyinfra live in their own venvs (made once, from PyPI, on this machine only: the
nodes are offline and need nothing but their python3). Every tool does the same work, written
as that tool is usually written: tests/bench/{nodeprov,ansible,pyinfra}/.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from nodeprov.testbed.cluster import Testbed

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
# ansible 11+ bundles community.general (ufw) and ansible.posix (sysctl) with ansible-core
VENV_PACKAGES = {"ansible": ("ansible>=11",), "pyinfra": ("pyinfra>=3,<4",)}
VERSION_COMMAND = {"ansible": ("ansible-playbook", "--version"), "pyinfra": ("pyinfra",
                                                                            "--version")}
_RECAP = re.compile(r"^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)",
                    re.MULTILINE)
_PYINFRA_TOTAL = re.compile(r"Grand total\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)")


@dataclass(frozen=True)
class Command:
    argv: list[str]
    env: dict[str, str] | None = None
    cwd: Path | None = None


@dataclass(frozen=True)
class Outcome:
    """How a run ended: ``changes`` None when the tool cannot tell; ``per_host`` holds
    nodeprov's (connections, round trips) per host."""

    ok: bool
    changes: int | None
    problem: str = ""
    per_host: dict[str, tuple[int, int]] = field(default_factory=dict)


def traceback_in(output: str) -> list[str]:
    """A thread's or the program's traceback in ``output``: its last line (the exception), once
    per distinct one. Never acceptable, whatever the exit code."""
    found: list[str] = []
    for block in output.split("Traceback (most recent call last):")[1:]:
        last = next((line for line in block.splitlines() if line and not line[0].isspace()),
                    "traceback")
        if f"traceback: {last}" not in found:
            found.append(f"traceback: {last}")
    return found


def ensure_venv(path: Path, tool: str) -> str:
    """The tool's venv at ``path`` (made on first use, from PyPI); its version line."""
    program, *args = VERSION_COMMAND[tool]
    if not (path / "bin" / program).exists():
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(path)], check=True)
        subprocess.run([str(path / "bin" / "pip"), "install", "-q", "--disable-pip-version-check",
                        *VENV_PACKAGES[tool]], check=True)
    shown = subprocess.run([str(path / "bin" / program), *args], capture_output=True,
                           text=True, check=True).stdout
    return shown.splitlines()[0].strip()


def at_once(forks: int | None, bed: Testbed) -> str:
    """How many hosts a tool handles at once: ``forks``, else every node."""
    return str(forks or len(bed.nodes))


class Nodeprov:
    name = "nodeprov"
    playbook = HERE / "nodeprov" / "playbook.yaml"

    def __init__(self, forks: int | None = None) -> None:
        self.forks = forks

    def prepare(self, bed: Testbed, work: Path) -> None:
        work.mkdir(parents=True, exist_ok=True)

    def command(self, bed: Testbed, work: Path, *, phase: str, network_only: bool) -> Command:
        program = Path(sys.executable).with_name("nodeprov")
        report = ["--json", str(work / f"{phase}.json")]
        if phase == "verify":  # the checks only, next to apply --check on the same nodes
            # verify's report has no hosts: the CLI runs in a process that tallies every
            # Session's connections and round trips (tests/bench/verify.py --count)
            return Command([sys.executable, "-m", "tests.bench.verify", "--count",
                            "--count-file", str(work / "verify.counts.json"), "--", "verify",
                            str(bed.inventory_path), "-p", str(self.playbook), "--no-job",
                            *report], cwd=REPO)
        tags = ["--tags", "network"] if network_only else []
        check = ["--check"] if phase == "check" else []
        return Command([str(program), "apply", str(bed.inventory_path), "-p", str(self.playbook),
                        "--forks", at_once(self.forks, bed), *report, *tags, *check])

    def outcome(self, work: Path, phase: str, output: str, exit_code: int,
                nodes: int) -> Outcome:
        report_path = work / f"{phase}.json"
        if not report_path.exists():
            return Outcome(False, None, f"exit {exit_code}, no report: {output[-500:]}")
        report = json.loads(report_path.read_text())
        if phase == "verify":  # its report has checks and drift, not hosts
            drift = len(report["drift"])
            counts = work / "verify.counts.json"
            per_host = ({name: (pair[0], pair[1]) for name, pair in
                         json.loads(counts.read_text()).items()} if counts.exists() else {})
            ok = exit_code == 0 and report["ok"] and not traceback_in(output)
            return Outcome(ok, drift, "" if ok else f"exit {exit_code}: {output[-500:]}",
                           per_host)
        hosts = report["hosts"]
        changes = sum(task["status"] == "changed" for host in hosts.values()
                      for task in host["tasks"])
        per_host = {name: (host["connections"], host["round_trips"])
                    for name, host in hosts.items()}
        failed = [host["error"] or f"{name}: {host['status']}" for name, host in hosts.items()
                  if host["status"] in ("failed", "unreachable")]
        ok = (exit_code == 0 and report["ok"] and len(hosts) == nodes and not failed
              and not traceback_in(output))
        problem = "; ".join([*failed, *traceback_in(output)]) or f"exit {exit_code}: " \
            f"{output[-500:]}"
        return Outcome(ok, changes, "" if ok else problem, per_host)

    def cleanup(self, work: Path) -> None:
        pass


class Ansible:
    """Tuned: forks = nodes (or --forks), pipelining, ControlPersist, no interpreter discovery,
    facts on."""

    name = "ansible"
    playbook = HERE / "ansible" / "site.yaml"

    def __init__(self, venv: Path, forks: int | None = None) -> None:
        self.venv, self.forks = venv, forks

    def prepare(self, bed: Testbed, work: Path) -> None:
        (work / "cp").mkdir(parents=True, exist_ok=True)

    def command(self, bed: Testbed, work: Path, *, phase: str, network_only: bool) -> Command:
        env = {"PATH": f"{self.venv / 'bin'}:/usr/sbin:/usr/bin:/sbin:/bin",
               "HOME": "/root", "LANG": "C.UTF-8",
               "ANSIBLE_CONFIG": str(HERE / "ansible" / "ansible.cfg"),
               "ANSIBLE_SSH_CONTROL_PATH_DIR": str(work / "cp"),
               "ANSIBLE_SSH_COMMON_ARGS": f"-F {bed.ssh_config_path}",
               "ANSIBLE_NOCOLOR": "1"}
        tags = ["--tags", "network"] if network_only else []
        return Command([str(self.venv / "bin" / "ansible-playbook"), "-i",
                        str(bed.inventory_path), str(self.playbook), "--forks",
                        at_once(self.forks, bed), *tags], env)

    def outcome(self, work: Path, phase: str, output: str, exit_code: int,
                nodes: int) -> Outcome:
        recap = [(int(changed), int(unreachable) + int(failed))
                 for _host, _ok, changed, unreachable, failed in _RECAP.findall(output)]
        ok = exit_code == 0 and len(recap) == nodes and not any(bad for _, bad in recap)
        changes = sum(changed for changed, _ in recap) if recap else None
        return Outcome(ok, changes, "" if ok else f"exit {exit_code}: {output[-800:]}")

    def cleanup(self, work: Path) -> None:
        """Stop the ControlPersist masters now rather than 60 s after their testbed is gone."""
        for socket in (work / "cp").glob("*"):
            subprocess.run(["ssh", "-o", f"ControlPath={socket}", "-O", "exit", "bench"],
                           capture_output=True, timeout=10, check=False)


class Pyinfra:
    name = "pyinfra"

    def __init__(self, venv: Path, forks: int | None = None) -> None:
        self.venv, self.forks = venv, forks

    def prepare(self, bed: Testbed, work: Path) -> None:
        work.mkdir(parents=True, exist_ok=True)
        data = {"ssh_user": "root", "ssh_key": str(bed.layout.client_key),
                "ssh_known_hosts_file": str(bed.layout.known_hosts),
                "ssh_strict_host_key_checking": "yes", "node_subnet": bed.subnet}
        hosts = [(name, {**data, "ssh_hostname": bed.address(name),
                         "node_address": bed.address(name)}) for name in bed.nodes]
        (work / "inventory.py").write_text(f"nodes = {hosts!r}\n")

    def command(self, bed: Testbed, work: Path, *, phase: str, network_only: bool) -> Command:
        deploys = ["network.py"] if network_only else ["venv.py", "network.py"]
        env = {"PATH": f"{self.venv / 'bin'}:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root",
               "LANG": "C.UTF-8", "NO_COLOR": "1"}
        return Command([str(self.venv / "bin" / "pyinfra"), "-y", "--parallel",
                        at_once(self.forks, bed), str(work / "inventory.py"), *deploys], env,
                       HERE / "pyinfra")

    def outcome(self, work: Path, phase: str, output: str, exit_code: int,
                nodes: int) -> Outcome:
        total = _PYINFRA_TOTAL.search(output)
        if total is None:
            return Outcome(False, None, f"exit {exit_code}, no results table: {output[-800:]}")
        _operations, success, error, _no_change = (0 if cell == "-" else int(cell)
                                                  for cell in total.groups())
        ok = exit_code == 0 and error == 0
        return Outcome(ok, success, "" if ok else f"exit {exit_code}: {output[-800:]}")

    def cleanup(self, work: Path) -> None:
        pass


Tool = Nodeprov | Ansible | Pyinfra
