"""nodeprov's own inventory vars: default, validator and meaning, in one table.

docs/variables.md is this table; the inventory loader applies the defaults and
validates every value before any connection.

    >>> VARIABLES["rdzv_port"].default
    29500
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from nodeprov.util import validate


@dataclass(frozen=True)
class Variable:
    default: Any
    check: Callable[[Any], Any]
    doc: str


def _choice(*allowed: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if str(value) not in allowed:
            raise ValueError(f"{value!r} is not one of: {', '.join(allowed)}")
        return str(value)
    return check


def _interface_or_auto(value: Any) -> str:
    return "auto" if value == "auto" else validate.interface_name(value)


def _cidr_or_any(value: Any) -> str:
    return "any" if value == "any" else validate.cidr(value)


def _python_version(value: Any) -> str:
    if isinstance(value, float):  # YAML and INI read 3.10 as the number 3.1
        raise ValueError(f"{value!r} is a number, not a version (3.10 reads as 3.1): quote it, "
                         'e.g. "3.10"')
    return validate.version(value)


def _torch_cuda(value: Any) -> str:
    text = str(value)
    if text == "auto" or re.fullmatch(r"cpu|cu[0-9]{2,4}|rocm[0-9]+\.[0-9]+(\.[0-9]+)?", text):
        return text
    raise ValueError(f"{text!r} is not a torch variant; use auto, cpu or cuXYZ (e.g. cu128), "
                     "or rocmX.Y (e.g. rocm6.4)")


def _list_of(check: Callable[[Any], Any]) -> Callable[[Any], tuple[Any, ...]]:
    def check_list(value: Any) -> tuple[Any, ...]:
        if isinstance(value, str) or not isinstance(value, (list, tuple)):
            raise ValueError(f"expected a list, got {type(value).__name__}")
        return tuple(check(item) for item in value)
    return check_list


# nccl_env goes into every node's /etc/environment: names only of the libraries it configures
# (LD_PRELOAD or PATH there would change every program on the node)
NCCL_ENV_PREFIXES = ("NCCL_", "GLOO_", "TORCH_")
NCCL_ENV_NAMES = ("OMP_NUM_THREADS",)  # torchrun sets it to 1 when unset, and warns


def _env_mapping(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise ValueError(f"expected a mapping of NAME: value, got {type(value).__name__}")
    for name in value:
        if not (str(name).startswith(NCCL_ENV_PREFIXES) or name in NCCL_ENV_NAMES):
            raise ValueError(f"{validate.env_name(name)} is not an NCCL variable; nccl_env takes "
                             f"{'*, '.join(NCCL_ENV_PREFIXES)}* and {', '.join(NCCL_ENV_NAMES)}")
    return {validate.env_name(k): validate.text_value(v) for k, v in value.items()}


# the widest node_subnet taken without node_subnet_allow_wide: a /8, or a /32 of IPv6
WIDEST_PREFIX = {4: 8, 6: 32}


def subnet_too_wide(subnet: str, allow_wide: bool) -> str | None:
    """Why a node_subnet is refused, or None: wider than WIDEST_PREFIX, the user not having
    allowed it (the data and rendezvous ports open to all of it).

    >>> subnet_too_wide("0.0.0.0/0", False)  # doctest: +ELLIPSIS
    "0.0.0.0/0 would open the data and rendezvous ports to 4294967296 addresses; ..."
    """
    network = ipaddress.ip_network(subnet)
    if network.prefixlen >= WIDEST_PREFIX[network.version] or allow_wide:
        return None
    return (f"{subnet} would open the data and rendezvous ports to {network.num_addresses} "
            f"addresses; give the nodes' subnet (at most a /{WIDEST_PREFIX[network.version]}), "
            "or set node_subnet_allow_wide: true if you mean it")


def _fraction(value: Any) -> float:
    if not str(value).isascii():  # float() reads "٠.٣" too
        raise ValueError(f"{value!r} is not a fraction between 0 and 1 (e.g. 0.2)")
    number = float(value)
    if not 0 < number < 1:
        raise ValueError(f"{value!r} is not a fraction between 0 and 1 (e.g. 0.2)")
    return number


def _domain(value: Any) -> str:
    return "" if value in (None, "") else validate.hostname(value)


def _optional(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: None if value is None else check(value)


VARIABLES: dict[str, Variable] = {
    "node_subnet": Variable(None, validate.cidr,
                            "The nodes' subnet (CIDR), required; only it reaches the data ports."),
    "node_subnet_allow_wide": Variable(False, validate.boolean,
                                       "Take a node_subnet wider than a /8 (IPv6: /32)."),
    "node_address": Variable(None, _optional(validate.ip_address),
                             "The node's address in node_subnet (default: ansible_host)."),
    "venv_path": Variable("/opt/nodeprov/venv", validate.absolute_path,
                          "Where the Python venv with torch lives on every node."),
    "python_version": Variable("3.10", _python_version,
                               "Minimum python3 version the venv may be built with."),
    "torch_version": Variable("2.13.0", validate.version,
                              "The torch release installed on every node."),
    "torch_cuda": Variable("auto", _torch_cuda,
                           "Torch wheel variant: auto (from the drivers), cpu, cuXYZ or rocmX.Y."),
    "pip_packages": Variable((), _list_of(validate.option_safe),
                             "Extra pip requirement specs installed into the venv."),
    "torch_numpy": Variable(True, validate.boolean,
                            "numpy in the venv beside torch (which warns in every rank "
                            "without it)."),
    "pip_index_url": Variable(None, _optional(validate.option_safe),
                              "pip --index-url for the nodes (a mirror)."),
    "pip_extra_index_url": Variable((), _list_of(validate.option_safe),
                                    "pip --extra-index-url values for the nodes."),
    "pip_find_links": Variable((), _list_of(validate.option_safe),
                               "pip --find-links values (directories or URLs on the nodes)."),
    "wheelhouse": Variable(False, validate.boolean,
                           "Download wheels once on this machine and push them over SSH."),
    "download_once": Variable(False, validate.boolean,
                              "Without the wheelhouse: one node downloads the wheels from the "
                              "index, the others fetch them from it over node_subnet."),
    "ipv6": Variable("disabled", _choice("enabled", "disabled"),
                     "IPv6 on the nodes, applied live and persisted."),
    "nccl_socket_ifname": Variable("auto", _interface_or_auto,
                                   "NCCL/gloo socket interface; auto = the one in node_subnet."),
    "nccl_env": Variable({}, _env_mapping,
                         "Extra NCCL_*, GLOO_*, TORCH_* (and OMP_NUM_THREADS) variables "
                         "persisted with the socket interface; no other names."),
    "rdzv_port": Variable(29500, validate.port,
                          "torchrun's c10d rendezvous / master port, open to node_subnet only."),
    "ssh_allow_from": Variable("any", _cidr_or_any,
                               "Where SSH is allowed from (any, or a CIDR)."),
    "firewall_manage": Variable(True, validate.boolean,
                                "false: leave the firewall to the node's own tool (firewalld); "
                                "the firewall task changes nothing there."),
    "hosts_fix_conflicts": Variable(True, validate.boolean,
                                    "Comment out /etc/hosts lines mapping a node name elsewhere."),
    "hosts_domain": Variable("", _domain,
                             "The domain under which a node's FQDN is listed in /etc/hosts "
                             "(e.g. cluster.local); none: FQDNs are not listed."),
    "run_as_root": Variable(False, validate.boolean,
                            "nodeprov run's sync and job as root (by become), not the login user."),
    "job_backend": Variable("auto", _choice("auto", "nccl", "gloo"),
                            "Backend of the verification job: nccl when every node has GPUs."),
    "job_timeout": Variable(120, validate.positive_int,
                            "Seconds before a hung verification job is killed on every node."),
    "job_max_bytes": Variable(64 * 1024 * 1024, validate.positive_int,
                              "Largest all-reduce message of the verification sweep."),
    "bandwidth_drop": Variable(0.3, _fraction,
                               "verify fails when busbw falls this fraction below baseline."),
    "ssh_config_file": Variable(None, _optional(validate.absolute_path),
                                "An ssh_config to read (default ~/.ssh/config), relative paths "
                                "from the inventory's folder."),
    "ansible_host": Variable(None, _optional(validate.address), "Address SSH connects to."),
    "ansible_port": Variable(None, _optional(validate.port),
                             "SSH port (default: ssh_config's Port, read when connecting)."),
    "ansible_user": Variable(None, _optional(validate.user_name), "SSH user."),
    "ansible_ssh_private_key_file": Variable(None, _optional(validate.absolute_path),
                                             "SSH private key (relative to the inventory)."),
    "ansible_become": Variable(False, validate.boolean, "Use sudo (for non-root users)."),
    "ansible_become_password": Variable(None, _optional(str), "sudo password (never logged)."),
    "ansible_timeout": Variable(None, _optional(validate.positive_int),
                                "Seconds to open an SSH connection (default 10)."),
    "ansible_host_key_checking": Variable(True, validate.boolean,
                                          "false: trust and record an unknown host key (a "
                                          "changed one is still refused)."),
}

PATH_VARIABLES = ("ssh_config_file", "ansible_ssh_private_key_file")
