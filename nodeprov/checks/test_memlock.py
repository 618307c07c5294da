"""The job's login may lock the memory RDMA needs: a new SSH session as the login user (the
one the checks open; pam_limits sets a connection's limits when it opens, sudo's would be
root's) shows ``ulimit -l`` at the memlock task's limit. The task's plan checks the files it
writes; only a new login shows what pam_limits and sshd make of them."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from nodeprov.checks import Drift
from nodeprov.checks.fresh import Fresh
from nodeprov.inventory import Host
from nodeprov.remote import reader
from nodeprov.tasks import memlock
from nodeprov.tasks.base import Context, Plan

AREA = "memlock"


def test_new_login_has_the_limit(context: Context, node: Host, params: memlock.MemlockParams,
                                 observed: str, plan: Plan, drift: Drift,
                                 fresh: Mapping[str, Fresh | str]) -> None:
    if not context.facts.rdma.present:
        pytest.skip(f"{node.name}: no RDMA ports, no locked-memory limit wanted")
    seen = fresh[node.name]
    assert not isinstance(seen, str), drift.line(f"a new SSH session failed: {seen}",
                                                 f"ulimit -l {params.limit}")
    if not seen.memlock:
        pytest.skip(f"{node.name}: the login's ulimit -l printed nothing")
    said = seen.memlock
    user = params.user or node.user
    others = memlock.memlock_lines(reader.observed_files(observed), user) if user else []
    assert said == params.limit, drift.effect_line(
        f"a new SSH login gets ulimit -l {said} (KiB)", params.limit, plan,
        memlock.UNKNOWN_USER if not user else
        "; ".join(others) if others else
        "sshd's PAM session has no pam_limits (UsePAM no?): set UsePAM yes, or LimitMEMLOCK "
        "on sshd's service")
