"""One torch build for the whole cluster, from every node's GPUs, driver and ROCm.

    >>> builds = known_builds("2.13.0")
    >>> h100 = NodeGpus("x86_64", driver=(535, 129, 3), gpus=(("NVIDIA H100", (9, 0)),))
    >>> choose_cluster_variant(builds, {"node1": h100}).variant  # CUDA 13 needs driver >= 580
    'cu129'
    >>> wheel_spec("2.13.0", "cu132"), index_url("cu132")
    ('torch==2.13.0+cu132', 'https://download.pytorch.org/whl/cu132')

The rule: every GPU node gets the same build (each bundles its own NCCL, which must match across
ranks): the newest variant of the release, published for every node's platform, that every
node's driver runs (NVIDIA's table and minor version compatibility: ``drivers``) and whose
kernels cover every GPU's architecture (``fit``). AMD nodes get the newest ``rocmX.Y``
variant their ROCm runs. Nodes with no GPU get ``cpu``; a GPU node never silently does. When no
variant serves every node, the error names the nodes, their GPUs and the releases that would.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from nodeprov.errors import EXIT_BAD_INPUT, NodeprovError
from nodeprov.variants import published
from nodeprov.variants.fit import NodeGpus, cuda_of, nvidia_problem, rocm_of, rocm_problem

INDEX_BASE: Final = "https://download.pytorch.org/whl"
VARIANT_RE: Final = re.compile(r"cpu|cu\d{3}|rocm\d+\.\d+(?:\.\d+)?")


class NoVariant(NodeprovError, ValueError):
    """No build of the asked torch release serves the cluster's nodes."""

    exit_code = EXIT_BAD_INPUT


@dataclass(frozen=True)
class ReleaseBuilds:
    """A release's published variants: platform -> CUDA variant -> architecture list (None:
    unknown), and its ROCm variants; ``source`` says where they were read."""

    release: str
    cuda: Mapping[str, Mapping[str, str | None]]
    rocm: tuple[str, ...] = ()
    source: str = "nodeprov's table (variants.published)"


@dataclass(frozen=True)
class ClusterChoice:
    """The cluster's variant, each node's (``cpu`` on nodes without a GPU), and, when a node
    held the cluster back from a newer variant, which node and why."""

    variant: str
    per_node: dict[str, str]
    limiting_node: str | None = None
    unlock: str | None = None


def release_of(torch_version: str) -> str:
    """``2.9.1`` -> ``2.9``."""
    match = re.fullmatch(r"(\d+)\.(\d+)(?:\.\d+)?", torch_version)
    if match is None:
        raise ValueError(f"not a torch version: {torch_version!r} (expected e.g. 2.9.1)")
    return f"{match.group(1)}.{match.group(2)}"


def known_builds(torch_version: str) -> ReleaseBuilds | None:
    """The builds of exactly ``torch_version`` in nodeprov's table (a variant that came with a
    later patch release is left out), None for a release it does not know.

    >>> sorted(known_builds("2.12.0").cuda["x86_64"]), sorted(known_builds("2.12.1").cuda["x86_64"])
    (['cu126', 'cu130', 'cu132'], ['cu126', 'cu129', 'cu130', 'cu132'])
    """
    release = release_of(torch_version)
    if release not in published.CUDA_BUILDS:
        return None
    patch = int(torch_version.split(".")[2]) if torch_version.count(".") == 2 else 0
    cuda = {platform: {variant: arch_list for variant, arch_list in built.items()
                       if published.FIRST_PATCH.get((release, variant), 0) <= patch}
            for platform, built in published.CUDA_BUILDS[release].items()}
    return ReleaseBuilds(release, cuda, published.ROCM_BUILDS.get(release, ()))


def choose_cluster_variant(builds: ReleaseBuilds, nodes: Mapping[str, NodeGpus],
                           override: str | None = None) -> ClusterChoice:
    """One variant for ``nodes`` (name -> NodeGpus); ``override`` ("cpu", "cu126", "rocm6.4")
    replaces the choice after checking that every GPU node can run it."""
    if not nodes:
        raise ValueError("no nodes to choose a torch build for")
    nvidia = {name: node for name, node in nodes.items() if node.driver is not None}
    amd = {name: node for name, node in nodes.items() if node.rocm is not None}
    if nvidia and amd:
        raise NoVariant(f"NVIDIA nodes ({', '.join(sorted(nvidia))}) and AMD nodes "
                        f"({', '.join(sorted(amd))}) cannot share one torch build (CUDA and "
                        "ROCm wheels differ): provision them as separate clusters")
    gpu_nodes = nvidia or amd

    def per_node(variant: str) -> dict[str, str]:
        return {name: variant if name in gpu_nodes else "cpu" for name in nodes}

    if override == "cpu" or (override is None and not gpu_nodes):
        return ClusterChoice("cpu", dict.fromkeys(nodes, "cpu"))
    if not gpu_nodes:
        raise NoVariant(f"torch_cuda={override} asks for a GPU build but no node has a usable "
                        "GPU driver; use cpu or auto")
    if override is not None:
        if override.startswith("rocm") != bool(amd):
            raise NoVariant(f"torch_cuda={override} does not fit these nodes' "
                            f"{'AMD' if amd else 'NVIDIA'} GPUs")
        problems = _problems(builds, gpu_nodes, override, override=True)
        if problems:
            raise NoVariant(f"torch_cuda={override}: {_list_problems(problems)}")
        return ClusterChoice(override, per_node(override))
    failures: dict[str, dict[str, str]] = {}
    for variant in _candidates(builds, gpu_nodes):
        problems = _problems(builds, gpu_nodes, variant)
        if not problems:
            limiting, unlock = _held_back(failures, variant)
            return ClusterChoice(variant, per_node(variant), limiting, unlock)
        failures[variant] = problems
    raise NoVariant(_nothing_fits(builds, gpu_nodes, failures))


def wheel_spec(torch_version: str, variant: str) -> str:
    """The pip requirement with the local label, e.g. ``torch==2.9.1+cu128``."""
    if not re.fullmatch(r"\d+\.\d+\.\d+", torch_version):
        raise ValueError(f"a wheel needs a full torch version such as 2.9.1, not {torch_version!r}")
    index_url(variant)
    return f"torch=={torch_version}+{variant}"


def index_url(variant: str, base: str = INDEX_BASE) -> str:
    """The package index that serves the variant's wheels."""
    if not VARIANT_RE.fullmatch(variant):
        raise ValueError(f"not a torch wheel variant: {variant!r} (expected cpu, cuXYZ or "
                         "rocmX.Y)")
    return f"{base}/{variant}"


def _candidates(builds: ReleaseBuilds, gpu_nodes: Mapping[str, NodeGpus]) -> list[str]:
    """The variants published for every GPU node's platform, newest first."""
    if any(node.rocm is not None for node in gpu_nodes.values()):
        return sorted(builds.rocm, key=rocm_of, reverse=True)
    platforms = sorted({node.platform for node in gpu_nodes.values()})
    missing = [platform for platform in platforms if not builds.cuda.get(platform)]
    if missing:
        names = sorted(name for name, node in gpu_nodes.items() if node.platform in missing)
        raise NoVariant(f"{', '.join(names)}: torch {builds.release} has no {missing[0]} CUDA "
                        f"build ({builds.source}); {_releases_with(missing[0])}")
    common = set.intersection(*(set(builds.cuda[platform]) for platform in platforms))
    if not common:
        offered = "; ".join(f"{platform}: {', '.join(builds.cuda[platform])}"
                            for platform in platforms)
        raise NoVariant(f"torch {builds.release} has no CUDA variant built for every node's "
                        f"platform ({offered}); use nodes of one platform")
    return sorted(common, key=cuda_of, reverse=True)


def _problems(builds: ReleaseBuilds, gpu_nodes: Mapping[str, NodeGpus], variant: str,
              override: bool = False) -> dict[str, str]:
    """node -> why ``variant`` does not serve it, for the nodes it does not serve."""
    problems: dict[str, str] = {}
    for name, node in sorted(gpu_nodes.items()):
        if node.rocm is not None:
            problem = (rocm_problem(node, variant) if variant in builds.rocm else
                       f"torch {builds.release} has no {variant} build (it has: "
                       f"{', '.join(builds.rocm) or 'none'})")
            if node.platform != published.X86:
                problem = f"PyTorch publishes no {node.platform} ROCm wheels"
        else:
            listed = builds.cuda.get(node.platform, {})
            arch_list = listed.get(variant)
            problem = (f"torch {builds.release} has no {variant} build for {node.platform} "
                       f"(it has: {', '.join(listed) or 'none'})" if variant not in listed
                       else nvidia_problem(node, builds.release, variant, arch_list,
                                           unknown_arch_ok=override))
        if problem:
            problems[name] = problem
    return problems


def _list_problems(problems: Mapping[str, str]) -> str:
    by_reason: dict[str, list[str]] = {}
    for name, why in problems.items():
        by_reason.setdefault(why, []).append(name)
    return "; ".join(f"{', '.join(names)}: {why}" for why, names in by_reason.items())


def _held_back(failures: Mapping[str, Mapping[str, str]],
               variant: str) -> tuple[str | None, str | None]:
    if not failures:
        return None, None
    best, problems = next(iter(failures.items()))
    names = sorted(problems)
    verb = "holds" if len(names) == 1 else "hold"
    return names[0], (f"{', '.join(names)} {verb} the cluster at {variant}; {best} would "
                      f"need: {_list_problems(problems)}")


def _nothing_fits(builds: ReleaseBuilds, gpu_nodes: Mapping[str, NodeGpus],
                  failures: Mapping[str, Mapping[str, str]]) -> str:
    nodes = "; ".join(f"{name}: {node.describe()}" for name, node in sorted(gpu_nodes.items()))
    tried = " | ".join(f"{variant}: {_list_problems(problems)}"
                       for variant, problems in failures.items())
    working = []
    for release in reversed(published.releases_oldest_first()):
        other = known_builds(release)
        if other is None or release == builds.release:
            continue
        fits = [v for v in _candidates_or_none(other, gpu_nodes)
                if not _problems(other, gpu_nodes, v)]
        if fits:
            working.append(f"torch {release} ({fits[0]})")
    would = (f"builds that would serve every node: {', '.join(working[:4])}" if working else
             "no torch release nodeprov knows serves every node: upgrade the drivers or split "
             "the cluster")
    return (f"no torch {builds.release} build serves every GPU node ({nodes}). Tried {tried}. "
            f"{would}; or set torch_cuda")


def _candidates_or_none(builds: ReleaseBuilds, gpu_nodes: Mapping[str, NodeGpus]) -> list[str]:
    try:
        return _candidates(builds, gpu_nodes)
    except NoVariant:
        return []


def _releases_with(platform: str) -> str:
    having = [f"{release} ({', '.join(published.CUDA_BUILDS[release][platform])})"
              for release in published.releases_oldest_first()
              if platform in published.CUDA_BUILDS[release]]
    return (f"releases with one: {'; '.join(having)}" if having else
            f"PyTorch publishes no {platform} CUDA wheels")


def parse_torch_version_py(text: str) -> tuple[str | None, str | None]:
    """``__version__`` and ``cuda`` from an installed ``torch/version.py``, read as literals.

    >>> parse_torch_version_py("__version__ = '2.13.0+cpu'\\ncuda: Optional[str] = None\\n")
    ('2.13.0+cpu', None)
    """
    if not text.strip():
        return None, None
    try:
        tree = ast.parse(text)
    except SyntaxError as error:
        raise ValueError(f"torch/version.py is not Python: {error.msg} (line {error.lineno})"
                         ) from error
    values: dict[str, str | None] = {}
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], statement.value
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
            target, value = statement.target, statement.value
        else:
            continue
        if (isinstance(target, ast.Name) and isinstance(value, ast.Constant)
                and (value.value is None or isinstance(value.value, str))):
            values[target.id] = value.value
    return values.get("__version__"), values.get("cuda")
