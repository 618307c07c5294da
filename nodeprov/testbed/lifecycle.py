"""Bring a testbed up and take it down; `up` undoes its own work when it fails or is interrupted.

    testbed = up(Path("/srv/tb"), nodes=3, outsider=True, shared=["/opt/wheels"])
    down(Path("/srv/tb"))   # True if there was a testbed to remove; safe to run again

    with temporary(nodes=2) as testbed:   # in a fresh directory under /srv, always removed
        testbed.ssh("node1", "true")
"""

from __future__ import annotations

import atexit
import functools
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from nodeprov.errors import EnvironmentProblem, InputError, NodeprovError
from nodeprov.testbed import boot, environment, network, probe
from nodeprov.testbed.addressing import chosen_subnet, free_subnet, plan_addresses, routed_subnets
from nodeprov.testbed.cluster import Testbed
from nodeprov.testbed.inventory_file import inventory, render
from nodeprov.testbed.layout import DEFAULT_DIR, Layout, checked_dir, checked_shared
from nodeprov.testbed.naming import MAX_NODES, OUTSIDER, Names, node_names
from nodeprov.testbed.processes import kill_and_wait, node_processes
from nodeprov.testbed.sshfiles import generate_keys, known_hosts, ssh_config
from nodeprov.testbed.state import Member, State, trusted

START_TIMEOUT = 30.0  # per phase: node inits ready, then every sshd greeting
TEMPORARY_PARENT = Path("/srv")


def plan(layout: Layout, count: int, subnet: str | None, outsider: bool,
         shared: Sequence[str] = ()) -> State:
    """Names and addresses for a new testbed, clashing with nothing on the machine."""
    if not 1 <= count <= MAX_NODES:
        raise InputError(f"{count} nodes: give 1 to {MAX_NODES}", field="--nodes")
    folders = checked_shared(shared, layout.dir)
    names = Names.for_dir(layout.dir)
    taken = routed_subnets()
    node_subnet = chosen_subnet(subnet, taken) if subnet else free_subnet(str(layout.dir), taken)
    bridge_address, addresses = plan_addresses(node_subnet, node_names(count))
    state = State(dir=str(layout.dir), created_dir=not layout.dir.exists(),
                  subnet=str(node_subnet), bridge=names.bridge,
                  bridge_address=str(bridge_address),
                  nodes=[Member(name, str(address), names.netns(name), names.veth(name))
                         for name, address in addresses.items()], shared=folders)
    if outsider:
        outsider_subnet = free_subnet(f"{layout.dir}/{OUTSIDER}", [*taken, node_subnet])
        address = plan_addresses(outsider_subnet, [OUTSIDER])[1][OUTSIDER]
        state.outsider = Member(OUTSIDER, str(address), names.netns(OUTSIDER),
                                names.veth(OUTSIDER))
        state.outsider_subnet = str(outsider_subnet)
    return state


def up(directory: Path = DEFAULT_DIR, nodes: int = 3, subnet: str | None = None,
       outsider: bool = False, extra_vars: Mapping[str, Any] | None = None,
       shared: Sequence[str] = (), sshd_settings: Mapping[str, str] | None = None) -> Testbed:
    """Create the testbed and wait until every node accepts an SSH login with the key; the
    nodes see the ``shared`` folders read-only, their sshd runs with ``sshd_settings``."""
    environment.require()
    layout = Layout(checked_dir(directory))
    present = [path for path in (layout.state_file, *layout.files, layout.nodes_dir)
               if path.exists()]
    if present:
        raise InputError(f"{present[0]} exists: run `nodeprov testbed down --dir {layout.dir}` "
                         "first, or choose another directory", field="--dir")
    state = plan(layout, nodes, subnet, outsider, shared)
    links, namespaces = network.existing(state)
    if links or namespaces:
        raise EnvironmentProblem(
            f"testbed: {', '.join(links + namespaces)} already exist, left by a testbed in "
            f"{layout.dir} whose state file is gone; remove them with `ip link del` and "
            "`ip netns del`")
    inventory_data = inventory(state.subnet, layout, {node.name: node.ip for node in state.nodes},
                               extra_vars or {})
    layout.dir.mkdir(parents=True, exist_ok=True)
    trusted(layout.dir, directory=True)  # else `down` would refuse the state written there
    state.save(layout.state_file)  # before making anything: `down` must find all of it
    try:
        _build(state, layout, sshd_settings)
        layout.inventory.write_text(render(inventory_data, layout))
    except BaseException:
        _teardown(state, layout)
        raise
    return Testbed(state)


def _build(state: State, layout: Layout, sshd_settings: Mapping[str, str] | None) -> None:
    sshd = environment.sshd_path()
    assert sshd is not None  # environment.require() checked it
    host_keys = {node.name: layout.node_dir(node.name) / "ssh_host_ed25519_key"
                 for node in state.nodes}
    for key in host_keys.values():
        key.parent.mkdir(parents=True)
    generate_keys({layout.client_key: "nodeprov-testbed",
                   **{key: name for name, key in host_keys.items()}})
    authorized_key = layout.client_public_key.read_text()
    for node in state.nodes:
        boot.prepare(layout.node_dir(node.name), node.name, node.ip, authorized_key,
                     host_keys[node.name], sshd_settings)
    network.create(state)
    _start_nodes(state, layout, sshd)
    layout.known_hosts.write_text(known_hosts(
        [(node.name, node.ip, host_keys[node.name].with_suffix(".pub").read_text())
         for node in state.nodes]))
    layout.ssh_config.write_text(ssh_config(layout, [(node.name, node.ip)
                                                     for node in state.nodes]))
    probe.await_banners([node.ip for node in state.nodes], START_TIMEOUT)
    failures = probe.login_failures(layout.ssh_config, [node.name for node in state.nodes])
    if failures:
        raise NodeprovError("testbed: ssh login failed: " + "; ".join(
            f"{name}: {error}" for name, error in sorted(failures.items())[:3]))


def _start_nodes(state: State, layout: Layout, sshd: str) -> None:
    """Launch every node at once, then record the PIDs each reports (even when one fails)."""
    pipes = {}
    try:
        for node in state.nodes:
            pipes[node.name] = boot.launch(node, layout.node_dir(node.name), sshd,
                                           Names.for_dir(layout.dir).marker, state.shared)
    finally:
        try:
            boot.await_started(pipes, {node.name: node for node in state.nodes},
                                lambda name: boot.log_path(layout.node_dir(name)), START_TIMEOUT)
        finally:
            state.save(layout.state_file)


def down(directory: Path = DEFAULT_DIR) -> bool:
    """Remove exactly what `up` made in ``directory``; False if there was no testbed there."""
    environment.require()
    layout = Layout(checked_dir(directory))
    if not layout.state_file.exists():
        return False
    _teardown(State.load(layout.state_file), layout)
    return True


def _teardown(state: State, layout: Layout) -> None:
    """Kill the nodes (by recorded PID and start time), then delete links, namespaces, files."""
    marker = Names.for_dir(layout.dir).marker
    survivors = kill_and_wait([process for node in state.nodes
                               for process in node_processes(node.init, node.launcher, marker)])
    if survivors:
        # Their mounts may still use the node directories: keep those, and the state file.
        raise NodeprovError("testbed: PIDs " + ", ".join(str(p.pid) for p in survivors)
                            + " survived SIGKILL; run `nodeprov testbed down` again")
    network.delete(state)
    if layout.nodes_dir.exists():
        shutil.rmtree(layout.nodes_dir)
    for path in layout.files:  # the state file last: it is the record of what is left
        path.unlink(missing_ok=True)
    if state.created_dir and layout.dir.exists() and not any(layout.dir.iterdir()):
        layout.dir.rmdir()


@contextmanager
def temporary(nodes: int = 3, outsider: bool = False, subnet: str | None = None,
              extra_vars: Mapping[str, Any] | None = None,
              parent: Path = TEMPORARY_PARENT, shared: Sequence[str] = (),
              sshd_settings: Mapping[str, str] | None = None) -> Iterator[Testbed]:
    """A testbed in a fresh directory under ``parent``, taken down and removed on leaving (and at
    interpreter exit, should the leaving never happen); ``shared`` and ``sshd_settings`` as
    ``up`` takes them."""
    parent.mkdir(parents=True, exist_ok=True)
    directory = Path(tempfile.mkdtemp(prefix="nodeprov-testbed-", dir=parent))
    cleanup = functools.partial(_remove_temporary, directory)
    atexit.register(cleanup)
    try:
        yield up(directory, nodes, subnet, outsider, extra_vars, shared, sshd_settings)
    finally:
        atexit.unregister(cleanup)
        cleanup()


def _remove_temporary(directory: Path) -> None:
    down(directory)  # raises before anything is deleted if a mount is still there
    # the folder is the fixture's own: what was written into it (a job baseline) goes too
    shutil.rmtree(directory, ignore_errors=True)
