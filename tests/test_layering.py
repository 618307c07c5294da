"""The layers point one way, read from the source (AST), so a lazy import counts too.

- each module imports only its own room (its folder, sub-rooms included) and the rooms of the
  layers below it, or where ``LAYERS`` says ``only``, just the rooms named there;
- only the CLI imports nodeprov.commands, and only inside the commands (--help stays fast);
- no two modules import each other, however indirectly, TYPE_CHECKING imports included;
- the engine and the shape of a task (tasks/base) know no room with its own actions (wheels/):
  the engine runs those through the table of handlers ``tasks/registry.py`` lists;
- every exception class nodeprov defines sits under NodeprovError (errors.py).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from tests.sources import PACKAGE, Module, imported, imported_modules, package_modules

ERRORS, UTIL = "nodeprov.errors", "nodeprov.util"
# (room, layer, only): a room is a module or a folder of them. A module may import its own room
# (sub-rooms included) and the rooms of lower layers; ``only`` narrows that to the rooms it
# names (() = none: the standard library and, for the job, torch).
LAYERS: tuple[tuple[str, int, tuple[str, ...] | None], ...] = (
    (ERRORS, 0, ()),                     # the error tree and exit codes
    ("nodeprov.nodeside", 0, ()),        # runs on the nodes: the standard library only
    (UTIL, 1, None),                     # validate, yamlfile, fanout, jinja
    ("nodeprov.jsonreport", 1, (ERRORS, "nodeprov.util.reportfile")),  # schema and writer
    ("nodeprov.gpu", 2, None),           # a node's GPUs, from what facts.sh reads
    ("nodeprov.fabric", 2, (ERRORS, UTIL)),  # NCCL's lines read back: which network it took
    ("nodeprov.variants", 2, None),      # choosing the torch variant
    ("nodeprov.config", 2, None),        # ansible.cfg and ANSIBLE_* settings
    ("nodeprov.htmlreport", 2, None),    # the JSON report as HTML (for commands/)
    ("nodeprov.inventory", 3, (ERRORS, UTIL, "nodeprov.config")),  # connects to nothing
    ("nodeprov.remote", 4, (ERRORS, UTIL, "nodeprov.gpu", "nodeprov.config",
                            "nodeprov.inventory.model",
                            "nodeprov.inventory.sshconfigs")),  # the SSH layer
    ("nodeprov.wheels", 5, None),        # wheels to the nodes: sources, uv, seeds
    ("nodeprov.tasks", 6, None),         # facts read, tasks decide
    ("nodeprov.tasks.textfiles", 6, (ERRORS, UTIL)),  # pure text edits, for every task
    ("nodeprov.playbook", 7, None),      # plays, tags, batches: read before any connection
    ("nodeprov.engine", 8, None),        # the runner: the only code that acts on nodes
    ("nodeprov.job", 9, None),           # one job on every node, and why nodes failed
    ("nodeprov.checks", 9, None),        # verify's checks (never a job)
    ("nodeprov.proof", 10, None),        # the verification job: matrix, job, baseline
    ("nodeprov.proof.allreduce", 10, ()),  # runs on the nodes under torchrun
    ("nodeprov.userjob", 11, None),      # nodeprov run: the user's script on every node
    ("nodeprov.commands", 12, None),     # one module per subcommand
    ("nodeprov.testbed", 12, (ERRORS, UTIL)),  # a side room: only the CLI and tests use it
    ("nodeprov.cli", 13, None),          # options, exit codes; commands imported lazily
    ("nodeprov.__main__", 14, ("nodeprov.cli", "nodeprov.errors")),
)
ROOT = "nodeprov"  # the package's __init__: its version, nothing to import
# (importers, room they must never import, even lazily or for types)
NEVER: tuple[tuple[tuple[str, ...], str], ...] = (
    (("nodeprov.engine", "nodeprov.tasks.base"), "nodeprov.wheels"),
)


def within(name: str, room: str) -> bool:
    return name == room or name.startswith(room + ".")


def room_of(name: str) -> tuple[str, int, tuple[str, ...] | None] | None:
    """The most specific row of ``LAYERS`` that holds module ``name``."""
    rows = [row for row in LAYERS if within(name, row[0])]
    return max(rows, key=lambda row: len(row[0])) if rows else None


def upward_imports(modules: list[Module]) -> list[str]:
    """"module imports target" for each import the table does not allow."""
    wrong = []
    for module in modules:
        row = room_of(module.name)
        if row is None:
            continue
        room, layer, only = row
        for target in sorted(imported_modules(module)):
            target_row = room_of(target)
            if within(target, room) or target_row is None:
                continue
            fine = (any(within(target, name) for name in only) if only is not None
                    else target_row[1] < layer)
            if not fine:
                wrong.append(f"{module.name} (layer {layer}) imports {target} "
                             f"(layer {target_row[1]})")
    return wrong


def test_every_import_points_down_the_layers() -> None:
    wrong = upward_imports(list(package_modules()))
    assert not wrong, wrong


def test_the_layer_check_sees_a_lazy_import_from_above() -> None:
    tree = ast.parse("def f():\n    from nodeprov.tasks.base import Plan\n"
                     "from nodeprov.util import fanout\n")
    module = Module("nodeprov.remote.x", PACKAGE / "remote" / "x.py", tree)
    assert {"nodeprov.tasks.base.Plan", "nodeprov.util.fanout"} <= imported(module)
    assert upward_imports([module]) == [
        "nodeprov.remote.x (layer 4) imports nodeprov.tasks.base (layer 6)"]


def forbidden_imports(modules: list[Module]) -> list[str]:
    """"module imports target" for each import ``NEVER`` forbids."""
    return [f"{module.name} imports {target}"
            for module in modules for importers, room in NEVER
            if any(within(module.name, importer) for importer in importers)
            for target in sorted(imported_modules(module)) if within(target, room)]


def test_the_engine_and_the_task_shape_import_nothing_from_the_wheels() -> None:
    wrong = forbidden_imports(list(package_modules()))
    assert not wrong, wrong
    tree = ast.parse("if TYPE_CHECKING:\n    from nodeprov.wheels.peers import Distribution\n")
    module = Module("nodeprov.tasks.base", PACKAGE / "tasks" / "base.py", tree)
    assert forbidden_imports([module]) == ["nodeprov.tasks.base imports nodeprov.wheels.peers"]


def nodeprov_names(module: Module) -> set[str]:
    return {name for name in imported(module) if within(name, "nodeprov")}


def test_every_module_sits_in_a_room_of_the_table() -> None:
    loose = [module.name for module in package_modules()
             if module.name != ROOT and room_of(module.name) is None]
    assert not loose, loose


def test_only_the_cli_imports_the_commands_and_only_when_one_runs() -> None:
    importers = {module.name for module in package_modules()
                 if not within(module.name, "nodeprov.commands")
                 and any(within(target, "nodeprov.commands") for target in nodeprov_names(module))}
    assert importers and all(within(name, "nodeprov.cli") for name in importers), importers
    eager = {f"{module.name} imports {target} at import time"
             for module in package_modules() if within(module.name, "nodeprov.cli")
             for target in imported(module, top_level_only=True)
             if within(target, "nodeprov.commands")}
    assert not eager, sorted(eager)


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def import_graph() -> dict[str, set[str]]:
    return {module.name: imported_modules(module) for module in package_modules()}


def test_no_import_cycle_not_even_through_type_checking_imports() -> None:
    assert not cycles(import_graph()), cycles(import_graph())


def test_a_cycle_through_a_type_only_import_is_found() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    graph = import_graph()
    assert "nodeprov.proof.matrix" in graph["nodeprov.proof.prove"]  # the walk sees real edges
    graph["nodeprov.proof.matrix"].add("nodeprov.proof.prove")  # as a TYPE_CHECKING import would
    assert any({"nodeprov.proof.matrix", "nodeprov.proof.prove"} <= set(cycle)
               for cycle in cycles(graph))


def exception_classes() -> dict[str, list[str]]:
    """{class name: its bases' names} of every class nodeprov defines."""
    classes: dict[str, list[str]] = {}
    for module in package_modules():
        for node in ast.walk(module.tree):
            if isinstance(node, ast.ClassDef):
                classes[node.name] = [ast.unparse(base).rsplit(".", 1)[-1] for base in node.bases]
    return classes


def roots(name: str, classes: dict[str, list[str]]) -> set[str]:
    """The classes outside nodeprov that ``name`` derives from (its own name if outside)."""
    if name not in classes:
        return {name}
    return {root for base in classes[name] for root in roots(base, classes)}


def is_under(name: str, ancestor: str, classes: dict[str, list[str]]) -> bool:
    return name == ancestor or any(is_under(base, ancestor, classes)
                                   for base in classes.get(name, []))


def test_every_exception_nodeprov_defines_is_a_nodeprov_error() -> None:
    classes = exception_classes()
    exceptions = {name for name in classes if any(
        root.endswith(("Error", "Exception", "Interrupt")) for root in roots(name, classes))}
    assert {"NodeprovError", "HostError", "TaskFailed", "ParamError"} <= exceptions
    outside = sorted(name for name in exceptions if not is_under(name, "NodeprovError", classes))
    assert not outside, outside
