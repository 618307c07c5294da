"""The failures a job's output can explain: each rule matches torch's, NCCL's or gloo's own words
(as the recorded outputs in tests/job/data have them), most specific first, and names the cause,
the nodeprov item that fixes it and the fix; ``diagnose`` applies them.

A rule must be safe: better no hint than a wrong one, so each pattern is the exact words the
library prints, and a rule about a node without GPUs fires only where its facts say so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    item: str
    pattern: re.Pattern[str]
    cause: str
    fix: str  # may name {node}
    own: bool = True  # the node's own cause, never a peer's echo
    without_gpus: bool = False  # only on a node whose facts show no GPU


_NET_FIX = "nodeprov apply --limit {node} --tags firewall,nccl_env"
_GLOO_CAUSE = ("gloo peers could not connect: the firewall blocks the ephemeral ports from "
               "node_subnet, or GLOO_SOCKET_IFNAME picks the wrong interface")

RULES = (
    Rule(
        "job",
        # CUDA asked for a device: torch's CPU build (no _cuda_setDevice, not compiled with
        # CUDA, no NCCL), a CUDA build with no GPU or driver to see (torch/cuda/__init__.py,
        # ProcessGroupNCCL).
        re.compile(r"Torch not compiled with CUDA enabled|has no attribute '_cuda_setDevice'"
                   r"|No CUDA GPUs are available|Found no NVIDIA driver on your system"
                   r"|invalid device ordinal|ProcessGroupNCCL is only supported with GPUs"
                   r"|Distributed package doesn't have NCCL built in"),
        "the script needs a GPU (it asks CUDA for one) and this node has none",
        "run it on nodes with GPUs, or let it fall back to the CPU when "
        "torch.cuda.is_available() is false (backend gloo)",
        without_gpus=True,
    ),
    Rule(
        "job",
        # torch.accelerator asked for a device where there is none: its own refusal, a device
        # string made of current_accelerator()'s None ("None:0"), torch.device(None) (what
        # get_default_backend_for_device(None) raises).
        re.compile(r"Cannot access accelerator device when none is available"
                   r"|device type at start of device string: None\b"
                   r"|device\(\) received an invalid combination of arguments - got \(NoneType\)"),
        "the script needs a GPU (it asks torch.accelerator for one) and this node has none",
        "run it on nodes with GPUs, or let it fall back to the CPU when "
        "torch.accelerator.is_available() is false (backend gloo)",
        without_gpus=True,
    ),
    Rule(
        "job",
        re.compile(r"another nodeprov job is running on this node"),
        "another nodeprov job holds this node and the rendezvous port (the line says whose)",
        "wait for it to end; a job whose nodeprov is gone stops by itself within a minute",
    ),
    Rule(
        "job",
        # the launcher's words when the folder to start in is not there (a shell's would name
        # the command, which reads as a venv without torchrun)
        re.compile(r"^--chdir \S.*: No such file or directory$", re.MULTILINE),
        "the folder --chdir names is not on the node",
        "create it on every node, --sync the folder it is to be, or give --chdir one every node "
        "has",
    ),
    Rule(
        "venv",
        # The venv's own torchrun is missing, or python cannot import torch.
        re.compile(r"torchrun: (?:No such file or directory|(?:command )?not found)"
                   r"|No module named '?torch\b"),
        "torch is missing from the node's venv",
        "nodeprov apply --limit {node} --tags venv",
    ),
    Rule(
        "job",
        # python's own words when the script is not there
        re.compile(r"can't open file .*\[Errno 2\] No such file or directory"),
        "the script is not on the node at that path",
        "--sync the folder that holds it, and name it relative to that folder (or to --chdir)",
    ),
    Rule(
        "job",
        # argparse's usage error for a --local_rank (or --local-rank) the script requires:
        # torch.distributed.launch appended it; torchrun only sets LOCAL_RANK (its
        # config_from_args adds it where use_env is false, which only launch's parser can say)
        re.compile(r"error: the following arguments are required: [^\n]*--local[-_]rank\b"),
        "the script requires --local_rank on its command line, which torch.distributed.launch "
        "gave it and torchrun does not: torchrun sets the LOCAL_RANK environment variable",
        "let the script read it there, e.g. add_argument('--local_rank', type=int, "
        "default=int(os.environ.get('LOCAL_RANK', 0)))",
    ),
    Rule(
        "venv",
        re.compile(r"ModuleNotFoundError: No module named "),
        "the script imports a module that is neither in the node's venv nor beside the script",
        "add its package to pip_packages in the inventory, then nodeprov apply --limit {node} "
        "--tags venv (a module of your own: --sync the folder that holds it)",
    ),
    Rule(
        "venv",
        re.compile(r"CUDA driver version is insufficient for CUDA runtime version"
                   r"|NVIDIA driver on your system is too old"),
        "the torch CUDA build is newer than the node's NVIDIA driver supports",
        "set torch_cuda to a variant the driver supports (or upgrade the driver), "
        "then nodeprov apply --limit {node} --tags venv",
    ),
    Rule(
        "venv",
        # The job's own GPU check (allreduce/steps.py), or torch's message and warning.
        re.compile(r"no kernel image is available for execution on the device"
                   r"|with CUDA capability sm_\d+ is not compatible with the current PyTorch"),
        "the installed torch build has no kernels for this node's GPU architecture",
        "nodeprov apply --limit {node} --tags venv (the choice of build checks every GPU's "
        "compute capability; or set torch_version/torch_cuda to a build with its kernels)",
    ),
    Rule(
        "venv",
        re.compile(r"Driver/library version mismatch"),
        "NVML/driver version mismatch: the driver was updated but the old kernel module is "
        "still loaded",
        "reboot {node}, then nodeprov apply --limit {node} --tags venv",
    ),
    Rule(
        "gpu",
        re.compile(r"NODEPROV_GPU_CHECK FAILED .*: wrong result|uncorrectable ECC error"
                   r"|GPU has fallen off the bus|unspecified launch failure"),
        "a GPU on the node computes wrong results or fails (hardware or driver fault)",
        "check {node}'s GPUs (nvidia-smi -q, dmesg for Xid errors); take the GPU or the node out",
    ),
    Rule(
        "venv",
        # a CPU build's torch.cuda (the nccl backend was asked of it)
        re.compile(r"Torch not compiled with CUDA enabled|has no attribute '_cuda_setDevice'"),
        "the venv's torch is a CPU build, but this node has GPUs and the job uses them",
        "nodeprov apply --limit {node} --tags venv (torch_cuda: auto chooses a CUDA build)",
    ),
    Rule(
        "job",
        re.compile(r"invalid device ordinal|No CUDA GPUs are available"),
        "a rank was given a GPU the node does not have: more processes per node than GPUs, or "
        "CUDA_VISIBLE_DEVICES hides some",
        "run one process per GPU of {node} (nvidia-smi -L), and check CUDA_VISIBLE_DEVICES",
    ),
    Rule(
        "job",
        re.compile(r"Duplicate GPU detected"),
        "two ranks share one GPU: more processes per node than the node has GPUs",
        "run one process per GPU of {node} (nvidia-smi -L), and check CUDA_VISIBLE_DEVICES",
    ),
    Rule(
        "nccl_env",
        # gloo's device.cc when GLOO_SOCKET_IFNAME names no interface; NCCL's bootstrap when
        # NCCL_SOCKET_IFNAME matches none.
        re.compile(r"Unable to find address for: |no socket interface found"
                   r"|no NCCL_SOCKET_IFNAME interface found|No interface found in the same subnet"),
        "NCCL_SOCKET_IFNAME or GLOO_SOCKET_IFNAME names no usable interface on the node",
        "set nccl_socket_ifname to the interface in node_subnet (or auto), "
        "then nodeprov apply --limit {node} --tags nccl_env",
    ),
    Rule(
        "hosts",
        # A peer advertised a loopback address: its hostname maps to 127.0.1.1 (Debian's default
        # /etc/hosts line) or no socket interface is set, so gloo fell back to the hostname.
        re.compile(r"(?:Connect to |connect \[)127\.\d+\.\d+\.\d+"),
        "a peer advertised a loopback address: its hostname maps to 127.0.1.1 in /etc/hosts "
        "or NCCL/GLOO_SOCKET_IFNAME is unset",
        "nodeprov apply --tags hosts,nccl_env",
        own=False,
    ),
    Rule(
        "hosts",
        # torch connects with AI_V4MAPPED, so a name with only an IPv4 entry resolves without
        # this gai warning; the warning means the name does not resolve at all.
        re.compile(r"cannot be retrieved \(gai error|Name or service not known|gaierror"
                   r"|Temporary failure in name resolution|getaddrinfo|host not found"),
        "a peer's hostname does not resolve: /etc/hosts lacks the node names",
        "nodeprov apply --limit {node} --tags hosts",
        own=False,
    ),
    Rule(
        "firewall",
        # Still setting up: a peer that closed then could not connect either.
        re.compile(r"Gloo connectFullMesh failed"),
        _GLOO_CAUSE,
        _NET_FIX,
        own=False,
    ),
    Rule(
        "job",
        # gloo's pair.cc when a peer process ended mid-job: a consequence, not the network.
        re.compile(r"Connection closed by peer \[[^\]]*\]:\d+"),
        "a peer rank ended first (it failed or was stopped); this rank only lost its connection",
        "look at the node that failed first for the cause",
        own=False,
    ),
    Rule(
        "firewall",
        re.compile(r"gloo/transport/tcp/pair\.(?:cc|h):\d+\]"),
        _GLOO_CAUSE,
        _NET_FIX,
        own=False,
    ),
    Rule(
        "firewall",
        re.compile(r"unhandled system error|ncclSystemError"
                   r"|NCCL WARN .*(?:[Cc]onnect|Connection|No route to host)"),
        "NCCL peers could not connect: the firewall blocks the ephemeral ports from "
        "node_subnet, or NCCL_SOCKET_IFNAME picks the wrong interface",
        _NET_FIX,
        own=False,
    ),
    Rule(
        "firewall",
        re.compile(r"RendezvousTimeoutError|RendezvousConnectionError"
                   r"|The client socket has (?:timed out|failed to connect)"
                   r"|connection to the C10d store has failed"),
        "the nodes could not meet at the rendezvous: its port on the first node is blocked, "
        "or a node did not start the job",
        "nodeprov apply --tags firewall, then check that the job started on every node",
        own=False,
    ),
    Rule(
        "job",
        # The store works (the rendezvous passed) but a rank never posted its address.
        re.compile(r"DistStoreError: wait timeout"),
        "a peer rank never joined the process group: it failed or hung before starting",
        "look at the other nodes' output for the first failure, fix that, then rerun",
        own=False,
    ),
)
