"""``torch``: torch built for the cluster's drivers, plus extra packages, in the venv.

    - name: torch matched to the driver
      torch:
        venv: "{{ venv_path }}"
        version: "{{ torch_version }}"
        cuda: "{{ torch_cuda }}"            # auto, cpu or cuXYZ
        packages: "{{ pip_packages }}"      # installed in the same resolve, from the same index
        index_url: "{{ pip_index_url }}"
        extra_index_urls: "{{ pip_extra_index_url }}"
        find_links: "{{ pip_find_links }}"
        wheelhouse: "{{ wheelhouse }}"
        download_once: "{{ download_once }}"  # no wheelhouse: one node downloads for all
        subnet: "{{ node_subnet }}"         # nodes fetch wheels from a peer over it
        numpy: "{{ torch_numpy }}"          # numpy too (torch warns in every rank without it)

Every GPU node gets the same variant (each bundles its own NCCL, which must match across ranks),
chosen by ``variants.choose`` from every inventory host's facts; CPU-only nodes get ``cpu``.

A requirement counts as satisfied when its name is installed at a version its specifier
contains (markers evaluated for the node's python and arch): the check pip makes before it
looks at an index, so a re-run costs no pip call. Extras and direct URLs count as satisfied
once the name is installed. torch itself is judged by its ``torch/version.py`` (version and
CUDA), so a replaced or hand-edited torch is reinstalled. After installing, a final command
imports torch and checks its version, CUDA, gloo, and that the NCCL it loads is the one torch
pins (the same on every node with the same torch build).

Beside the task: ``params`` (its parameters, and what the probe saw), ``choice`` (the build for
one host, from every host's facts), ``install`` (the sources, the wheelhouse and its peers, uv
or pip).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nodeprov.remote import reader
from nodeprov.tasks.base import (
    Change,
    Context,
    Plan,
    Probe,
    Run,
    TaskType,
)
from nodeprov.tasks.torch.choice import choose_for_host
from nodeprov.tasks.torch.install import Wanted, install_actions, local_dir, sources_for
from nodeprov.tasks.torch.params import TorchParams, TorchState
from nodeprov.tasks.torch.requirements import marker_environment, parse_dist_infos, unsatisfied
from nodeprov.tasks.venv import node_python, parse_pyvenv_cfg
from nodeprov.variants.choose import parse_torch_version_py, wheel_spec
from nodeprov.wheels import installer, pipconfig
from nodeprov.wheels.installer import parse_uv_line

if TYPE_CHECKING:
    from nodeprov.remote.facts import Facts

_REQUIRES = "Requires-Dist: "
_OWN_FILES = ("/pyvenv.cfg", "/torch/version.py")
# argv: the venv, then nodeprov_read's ROOT. Prints whether uv is there (installer.UV_PROBE),
# the glibc version on a line, the venv's *.dist-info names and torch's Requires-Dist lines, the
# node's PIP_* variables, then pyvenv.cfg, torch/version.py and the node's pip files.
_PROBE = reader.READER + installer.UV_PROBE + r"""venv=$1; root=$2
getconf GNU_LIBC_VERSION 2>/dev/null || echo
set -- "$venv/pyvenv.cfg"
for sp in "$venv"/lib/python3*/site-packages; do
  [ -d "$sp" ] || continue
  for dist in "$sp"/*.dist-info; do
    case $dist in *'
'*) ;; *) printf '%s\n' "${dist##*/}" ;; esac
  done
  sed -n '/^Requires-Dist: /p; /^$/q' "$sp"/torch-*.dist-info/METADATA 2>/dev/null; echo
  set -- "$@" "$sp/torch/version.py"
done
""" + pipconfig.SHELL + """nodeprov_read "$root" "$@"
"""
VERIFY = r"""import importlib.metadata, sys
import torch, torch.distributed
version, variant, cuda, gpus = sys.argv[1:]
problems = []
public, _, label = torch.__version__.partition("+")
if public != version or label not in ("", variant) or (torch.version.cuda or "") != cuda:
    problems.append(f"imports torch {torch.__version__} (CUDA {torch.version.cuda}), "
                    f"expected {version}+{variant}")
if not torch.distributed.is_gloo_available():
    problems.append("torch.distributed has no gloo backend")
nccl = "-"
if gpus != "0" and not torch.cuda.is_available():
    problems.append(f"torch.cuda.is_available() is False on a node with {gpus} GPUs")
elif gpus != "0":
    nccl = ".".join(map(str, torch.cuda.nccl.version()))
    pins = [r.split("==")[1].split(";")[0].strip() for r in importlib.metadata.requires("torch")
            or () if r.startswith("nvidia-nccl") and "==" in r]
    if pins and pins[0] != nccl:
        problems.append(f"loads NCCL {nccl} but torch pins {pins[0]} (LD_LIBRARY_PATH?)")
print(f"torch {torch.__version__} cuda {torch.version.cuda} nccl {nccl} gloo yes")
sys.exit("; ".join(problems) or None)
"""


def probe(params: TorchParams) -> Probe:
    return Probe(("sh", "-c", _PROBE, "nodeprov-torch", params.venv, *reader.read_args()))


def parse_probe(observed: str) -> TorchState:
    uv, _, observed = observed.partition("\n")
    glibc, _, rest = observed.partition("\n")
    lines = rest.split("\n")
    start = next((i for i, line in enumerate(lines) if line.startswith("/")), len(lines))
    requires = [line for line in lines[:start] if line.startswith(_REQUIRES)]
    dists = "\n".join(line for line in lines[:start]
                      if not line.startswith((_REQUIRES, pipconfig.ENV_PREFIX)))
    # nodeprov_read's output (ROOT first): pyvenv.cfg, version.py, then pip's files
    read = reader.observed_files("\n".join(lines[start:]))
    ours = {path: text for path, text in read.items() if path.endswith(_OWN_FILES)}
    found = {path.rpartition("/")[2]: text for path, text in ours.items() if text is not None}
    try:
        torch_version, torch_cuda = parse_torch_version_py(found.get("version.py", ""))
    except ValueError:  # a mangled version.py: torch is as good as absent
        torch_version = torch_cuda = None
    return TorchState(
        python=parse_pyvenv_cfg(found.get("pyvenv.cfg", "")),
        glibc=_glibc(glibc.split()[-1]) if glibc.strip() else None,
        torch_version=torch_version, torch_cuda=torch_cuda,
        torch_requires=tuple(line.removeprefix(_REQUIRES) for line in requires),
        installed=parse_dist_infos(dists),
        pip_files={path: text for path, text in read.items() if path not in ours},
        pip_env=pipconfig.parse_env("\n".join(lines[:start])),
        uv=parse_uv_line(uv),
    )


def _glibc(text: str) -> tuple[int, int] | None:
    major, _, minor = text.partition(".")
    return (int(major), int(minor)) if major.isdigit() and minor.isdigit() else None


def variant_cuda(variant: str) -> str | None:
    """What ``torch.version.cuda`` says for a variant: cu130 -> "13.0", cpu or rocm6.4 -> None."""
    digits = variant.removeprefix("cu")
    return None if not variant.startswith("cu") else f"{int(digits[:-1])}.{digits[-1]}"


def choose(ctx: Context, params: TorchParams) -> tuple[str, list[str], list[str]]:
    """This host's variant from every host's facts, with notes and warnings saying why."""
    return choose_for_host(ctx, params.version, params.cuda, params.sources)


def plan(ctx: Context, params: TorchParams, observed: str) -> Plan:
    state = parse_probe(observed)
    variant, notes, warnings = choose(ctx, params)
    if state.uv.failed:
        warnings.append(f"installed with pip: uv failed: {state.uv.failed} (uv is not tried "
                        f"again here until {installer.UV_FAILED} is removed)")
    python = state.python or node_python(ctx.facts, params.python_version)[1]
    if state.python is None:
        notes.append(f"no venv at {params.venv} yet (the venv task creates it, with python "
                     f"{python})")
    environment = marker_environment(python, ctx.facts.arch)
    spec = wheel_spec(params.version, variant)
    problem = torch_problem(state, params.version, variant)
    missing = unsatisfied(params.wanted_packages, state.installed, environment)
    broken = [] if problem else unsatisfied(state.torch_requires, state.installed, environment)
    if not (problem or missing or broken):
        nccl = sorted(f"NCCL {v} ({n})" for n, v in state.installed.items()
                      if n.startswith("nvidia-nccl"))
        packages = params.wanted_packages
        satisfied = [f"{len(packages)} extra packages already satisfied"]
        return Plan.noop(f"torch {state.torch_version} already in {params.venv}", *nccl,
                         *satisfied[:len(packages)], *notes, warnings=warnings)
    sources, where = sources_for(params, state, variant)
    force = bool(problem) and not unsatisfied([spec], state.installed, environment)
    actions, wheels_from, installer_words = install_actions(
        ctx, params, state, Wanted(variant, python, (spec, *missing), force, sources, where))
    if params.wheelhouse:
        local = local_dir(params, variant, python, state, ctx)
        where = f"this machine's wheelhouse ({local}, {wheels_from})"
    elif params.download_once:
        where += f" ({wheels_from})"
    where += f" {installer_words}"
    if problem:
        size = "~200 MB" if variant == "cpu" else "~3 GB with the NVIDIA libraries"
        extras = f" with {', '.join(missing)}" if missing else ""
        summary = f"install {spec} ({size}){extras} from {where} ({problem})"
    else:
        summary = f"install {', '.join(missing + broken)} into {params.venv} from {where}"
    verify = verify_run(ctx.facts, params, variant)
    return Plan.of(Change(summary, (*actions, verify)), notes=notes, warnings=warnings)


def verify_run(facts: Facts, params: TorchParams, variant: str) -> Run:
    """The venv's python running VERIFY: the install's last step, and verify's torch check."""
    gpus = str(facts.gpu_count) if variant != "cpu" else "0"
    return Run((f"{params.venv}/bin/python", "-c", VERIFY, params.version, variant,
                variant_cuda(variant) or "", gpus))


def torch_problem(state: TorchState, version: str, variant: str) -> str | None:
    """Why the installed torch is not the wanted build, None when it is."""
    if state.torch_version is None:
        return "torch not installed"
    public, _, label = state.torch_version.partition("+")
    if public != version or label not in ("", variant) or state.torch_cuda != variant_cuda(
            variant):
        return f"found torch {state.torch_version}, CUDA {state.torch_cuda or 'none'}"
    return None


TASK = TaskType("torch", "torch built for the cluster's drivers, plus extra packages",
                TorchParams, probe, plan)
