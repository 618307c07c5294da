"""The torch task's choice of build for one host, from every host's facts::

    variant, notes, warnings = choose_for_host(ctx, "2.13.0", "auto", index=None)

A host whose GPU is there but unusable (``facts.accelerators.problem``) fails with that cause,
unless ``torch_cuda=cpu`` asks for the CPU build; it is left out of the others' choice, as an
unreachable host is. A release newer than nodeprov's table is looked up on the index in use.
"""

from __future__ import annotations

from functools import lru_cache

from nodeprov.remote.facts import Facts
from nodeprov.tasks.base import Context, TaskFailed
from nodeprov.variants.choose import INDEX_BASE, ReleaseBuilds, choose_cluster_variant, known_builds
from nodeprov.variants.drivers import parse_driver
from nodeprov.variants.fit import NodeGpus
from nodeprov.variants.index import index_builds


def node_gpus(facts: Facts) -> NodeGpus:
    """What the choice needs from a node's facts."""
    if facts.gpu is not None:
        return NodeGpus(facts.arch, parse_driver(facts.gpu.driver_version),
                        facts.gpu.cuda_version,
                        tuple((gpu.name, gpu.compute_capability) for gpu in facts.gpu.gpus))
    if facts.accelerators.rocm is not None and facts.accelerators.vendor("amd"):
        return NodeGpus(facts.arch, rocm=facts.accelerators.rocm,
                        gpus=tuple((f"AMD GPU [{gpu.device_id}]", None)
                                   for gpu in facts.accelerators.vendor("amd")))
    return NodeGpus(facts.arch)


@lru_cache(maxsize=8)  # one index read per release and index in a run, not one per host
def release_builds(torch_version: str, index: str | None) -> ReleaseBuilds:
    """The release's builds: nodeprov's table, else what the index lists."""
    return known_builds(torch_version) or index_builds(torch_version, index or INDEX_BASE)


def choose_for_host(ctx: Context, torch_version: str, cuda: str,
                    index: str | None) -> tuple[str, list[str], list[str]]:
    """This host's variant, with notes and warnings saying why."""
    problem = ctx.facts.accelerators.problem
    if problem and cuda != "cpu":
        raise TaskFailed(f"GPU unusable: {problem}")
    usable = {name: facts for name, (_, facts) in ctx.cluster.items()
              if facts is not None and not (facts.accelerators.problem and cuda != "cpu")}
    try:
        builds = release_builds(torch_version, index)
        choice = choose_cluster_variant(builds, {name: node_gpus(facts)
                                                 for name, facts in usable.items()},
                                        None if cuda == "auto" else cuda)
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
