"""Time to load and validate a 1,000-host INI inventory with group_vars (issue #12: < 0.3 s on
one core), and the same hosts as a YAML inventory for comparison. Prints the figures.

    .venv/bin/python -m tests.bench.inventory_load
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from nodeprov.inventory import load_inventory

HOSTS = 1000


def write_inventory(folder: Path) -> Path:
    racks = [f"[rack{r}]\n" + "".join(
        f"node{r * 100 + n:04d} ansible_host=10.{r}.{n // 250}.{n % 250 + 1} gpu_index={n % 8}\n"
        for n in range(100)) for r in range(HOSTS // 100)]
    children = "[gpu:children]\n" + "".join(f"rack{r}\n" for r in range(HOSTS // 100))
    (folder / "group_vars").mkdir()
    (folder / "group_vars" / "all.yml").write_text(
        "node_subnet: 10.0.0.0/8\nansible_user: ubuntu\nrdzv_port: 29500\n"
        "nccl_env: {NCCL_DEBUG: WARN}\nfqdn: '{{ inventory_hostname }}.cluster.example'\n")
    (folder / "group_vars" / "gpu.yml").write_text("torch_cuda: cu128\nansible_become: true\n")
    path = folder / "hosts.ini"
    path.write_text("\n".join(racks) + "\n" + children)
    return path


def write_yaml_twin(folder: Path) -> Path:
    """The same racks and hosts as ``write_inventory``'s, in YAML, beside the same group_vars."""
    lines = ["gpu:", "  children:"]
    for rack in range(HOSTS // 100):
        lines += [f"    rack{rack}:", "      hosts:"] + [
            f"        node{rack * 100 + n:04d}: {{ansible_host: 10.{rack}.{n // 250}."
            f"{n % 250 + 1}, gpu_index: {n % 8}}}" for n in range(100)]
    path = folder / "hosts.yml"
    path.write_text("\n".join(lines) + "\n")
    return path


def measure(path: Path) -> list[float]:
    times = []
    for _ in range(7):
        started = time.process_time()  # CPU time of this process: one core
        inventory = load_inventory(path)
        times.append(time.process_time() - started)
    if len(inventory.hosts) != HOSTS:
        raise SystemExit(f"{path}: {len(inventory.hosts)} hosts read, {HOSTS} written")
    return times


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ini = write_inventory(Path(tmp))
        for kind, path, target in (("INI", ini, " (target < 0.3 s)"),
                                   ("YAML", write_yaml_twin(Path(tmp)), "")):
            times = measure(path)
            print(f"load+validate {HOSTS}-host {kind} inventory with group_vars: median "
                  f"{statistics.median(times):.3f} s CPU, min {min(times):.3f} s, max "
                  f"{max(times):.3f} s ({len(times)} runs){target}")


if __name__ == "__main__":
    main()
