"""The torch task's choice of build for one host, from every host's facts::

    variant, notes, warnings = choose_for_host(ctx, "2.13.0", "auto", Sources())

A host whose GPU is there but unusable (``facts.accelerators.problem``) fails with that cause,
unless ``torch_cuda=cpu`` asks for the CPU build; it is left out of the others' choice, as an
unreachable host is. Which variants exactly ``torch_version`` has comes from the index in use
(the inventory's ``pip_*`` sources, else PyTorch's), read once per run; where it cannot be read,
from nodeprov's table, and the plan line says which.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from nodeprov.remote.facts import Facts
from nodeprov.tasks.base import Context, TaskFailed
from nodeprov.variants.choose import (
    NoVariant,
    ReleaseBuilds,
    choose_cluster_variant,
    known_builds,
    release_of,
)
from nodeprov.variants.fit import NodeGpus
from nodeprov.variants.index import IndexUnreadable, index_builds, listing_pages
from nodeprov.wheels.wheelhouse import Sources


def node_gpus(facts: Facts) -> NodeGpus:
    """What the choice needs from a node's facts."""
    if facts.gpu is not None:
        return NodeGpus.nvidia(facts.arch, facts.gpu.driver_version, facts.gpu.cuda_version,
                               ((gpu.name, gpu.compute_capability) for gpu in facts.gpu.gpus),
                               facts.gpu.capability_note)
    if facts.accelerators.rocm is not None and facts.accelerators.vendor("amd"):
        return NodeGpus(facts.arch, rocm=facts.accelerators.rocm,
                        gpus=tuple((f"AMD GPU [{gpu.device_id}]", None)
                                   for gpu in facts.accelerators.vendor("amd")))
    return NodeGpus(facts.arch)


@lru_cache(maxsize=8)  # one read of the index per version and sources in a run, not per host
def release_builds(torch_version: str, pages: tuple[str, ...]) -> ReleaseBuilds:
    """The version's builds as the index ``pages`` list them, else as nodeprov's table does."""
    try:
        return index_builds(torch_version, pages)
    except IndexUnreadable as error:
        known = known_builds(torch_version)
        if known is None:
            raise NoVariant(
                f"torch {torch_version} is not in nodeprov's table and the index could not be "
                f"read ({error}); set torch_cuda (cpu, cuXYZ or rocmX.Y) to name the build, or "
                "pick a release the table knows") from None
        return ReleaseBuilds(known.release, known.cuda, known.rocm,
                             source=f"nodeprov's table (index unreachable: {error})")


def _builds(torch_version: str, cuda: str, sources: Sources,
            nodes: Iterable[NodeGpus]) -> ReleaseBuilds:
    """The builds the choice picks from; a cluster without GPU nodes, or told cpu, needs none
    and reads no index."""
    nodes = list(nodes)
    if cuda == "cpu" or not any(node.driver or node.rocm for node in nodes):
        return ReleaseBuilds(release_of(torch_version), {}, source="no index read: the CPU "
                             "build for every node")
    pages = listing_pages(torch_version, tuple(filter(None, (
        sources.index_url, *sources.extra_index_urls))), sources.find_links,
        rocm=any(node.rocm for node in nodes))
    return release_builds(torch_version, pages)


def choose_for_host(ctx: Context, torch_version: str, cuda: str,
                    sources: Sources) -> tuple[str, list[str], list[str]]:
    """This host's variant, with notes and warnings saying why."""
    problem = ctx.facts.accelerators.problem
    if problem and cuda != "cpu":
        raise TaskFailed(f"GPU unusable: {problem}")
    usable = {name: facts for name, (_, facts) in ctx.cluster.items()
              if facts is not None and not (facts.accelerators.problem and cuda != "cpu")}
    nodes = {name: node_gpus(facts) for name, facts in usable.items()}
    try:
        builds = _builds(torch_version, cuda, sources, nodes.values())
        choice = choose_cluster_variant(builds, nodes, None if cuda == "auto" else cuda)
    except ValueError as error:
        raise TaskFailed(f"no torch {torch_version} build for this cluster: {error}") from None
    variant = choice.per_node[ctx.host.name]
    notes = [f"build {variant} for this node (cluster: {choice.variant}, torch_cuda={cuda}; "
             f"variants from {builds.source})"]
    warnings: list[str] = []
    if choice.unlock:
        (warnings if choice.limiting_node == ctx.host.name else notes).append(choice.unlock)
    left_out = sorted(set(ctx.cluster) - set(usable))
    if left_out:
        warnings.append(f"{', '.join(left_out)} unreachable or with an unusable GPU: not "
                        "considered in the choice of the torch build")
    if (ctx.facts.gpu or problem) and variant == "cpu":
        warnings.append("GPUs here, but torch_cuda=cpu: installing the CPU build as asked")
    return variant, notes, warnings
