"""NCCL takes the node's Active RDMA ports and the subnet's RoCE v2 GID: a NEW SSH session (as
the login user, as torchrun's launcher opens one) has the nccl_fabric task's NCCL_IB_HCA and
NCCL_IB_GID_INDEX, and so do the files NCCL reads where the environment lacks them. The task's
plan checks the files it writes; what pam_env and NCCL take from them only the node tells."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from nodeprov.checks import Drift
from nodeprov.checks.fresh import Fresh, nccl_reads, setting_lines
from nodeprov.inventory import Host
from nodeprov.tasks import nccl_env, nccl_fabric
from nodeprov.tasks.base import Context, Plan

AREA = "nccl_fabric"


def test_new_session_selects_the_ports(fresh: Mapping[str, Fresh | str], node: Host,
                                       context: Context, params: nccl_fabric.NcclFabricParams,
                                       plan: Plan, drift: Drift) -> None:
    wanted, _, _ = nccl_fabric.wanted_variables(context.facts.rdma, params.subnet)
    if not wanted:
        pytest.skip(f"{node.name}: no Active InfiniBand or RoCE port, nothing to select")
    seen = fresh[node.name]
    listed = ", ".join(f"{name}={value}" for name, value in wanted.items())
    assert not isinstance(seen, str), drift.line(f"a new SSH session failed: {seen}", listed)
    wrong = [f"{name}={seen.environment.get(name, '(unset)')}" for name, value in wanted.items()
             if seen.environment.get(name) != value]
    assert not wrong, drift.effect_line(
        f"a new SSH session has {', '.join(wrong)}", listed, plan, setting_lines(
            seen, [name for name, value in wanted.items() if seen.environment.get(name) != value]))
    read, removals = nccl_reads(seen, wanted)
    in_files = [f"{name}={read.get(name, '(unset)')}" for name, value in wanted.items()
                if read.get(name) != value]
    assert not in_files, drift.effect_line(
        f"NCCL reads {', '.join(in_files)} from its files", listed, plan,
        "; ".join(removals) or f"{nccl_env.NCCL_CONF} lacks them")
