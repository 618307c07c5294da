"""What the CLI commands do, outside Typer: load, validate, run, report, pick the exit code."""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from importlib import resources
from pathlib import Path

from rich.console import Console
from rich.table import Table

from nodeprov.errors import EXIT_HOST_FAILED, EXIT_OK, HostError
from nodeprov.inventory import Host, Inventory, load_inventory
from nodeprov.playbook import load_playbook
from nodeprov.report import LiveReporter, PlainReporter, json_report, print_recap
from nodeprov.runner import RunOptions, run_playbook
from nodeprov.session import Session, SshOptions


def default_playbook() -> Path:
    return Path(str(resources.files("nodeprov").joinpath("playbooks", "site.yaml")))


def select_hosts(inventory: Inventory, limit: str | None) -> list[Host]:
    return inventory.select(limit) if limit else list(inventory.hosts)


def run_apply(inventory_path: Path, playbook_path: Path | None, *, check: bool, diff: bool,
              limit: str | None, tags: str | None, forks: int, accept_new_host_keys: bool,
              json_path: str | None, verbose: bool) -> int:
    inventory = load_inventory(inventory_path)
    playbook = load_playbook(playbook_path or default_playbook(), inventory)
    targets = select_hosts(inventory, limit)
    options = RunOptions(
        check=check, forks=forks,
        tags=frozenset(t.strip() for t in tags.split(",") if t.strip()) if tags else frozenset(),
        ssh=SshOptions(accept_new_host_keys=accept_new_host_keys),
    )
    console = Console(stderr=json_path == "-", highlight=False, soft_wrap=True)
    with ExitStack() as stack:
        if console.is_terminal:
            reporter: PlainReporter = stack.enter_context(
                LiveReporter(console, [h.name for h in targets], diff=diff, verbose=verbose))
        else:
            reporter = PlainReporter(console, diff=diff, verbose=verbose)
        results = run_playbook(playbook, inventory, targets, options, reporter)
    print_recap(console, results, check=check)
    if json_path:
        text = json_report(results, check=check)
        if json_path == "-":
            sys.stdout.write(text + "\n")
        else:
            Path(json_path).write_text(text + "\n")
    failed = any(r.status in ("failed", "unreachable") for r in results)
    return EXIT_HOST_FAILED if failed else EXIT_OK


def run_facts(inventory_path: Path, *, limit: str | None, forks: int,
              accept_new_host_keys: bool, as_json: bool) -> int:
    inventory = load_inventory(inventory_path)
    hosts = select_hosts(inventory, limit)
    options = SshOptions(accept_new_host_keys=accept_new_host_keys)

    def read(host: Host) -> dict[str, str] | str:
        try:
            with Session(host, options) as session:
                return session.gather([])[0].summary()
        except HostError as error:
            return str(error)

    with ThreadPoolExecutor(max_workers=forks) as pool:
        gathered = dict(zip((h.name for h in hosts), pool.map(read, hosts), strict=True))
    if as_json:
        sys.stdout.write(json.dumps(gathered, indent=2) + "\n")
    else:
        console = Console(highlight=False)
        table = Table("host", "fact", "value")
        for name, facts in gathered.items():
            rows = facts.items() if isinstance(facts, dict) else [("error", facts)]
            for index, (key, value) in enumerate(rows):
                table.add_row(name if index == 0 else "", key, value,
                              end_section=index == len(rows) - 1)
        console.print(table)
    return EXIT_HOST_FAILED if any(isinstance(v, str) for v in gathered.values()) else EXIT_OK
