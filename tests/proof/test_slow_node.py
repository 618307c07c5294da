"""verify --slow-nodes on the test cluster: a node whose link is throttled with tc is named as
soon as a round can tell it apart, before the schedule ends (testbed, 4 nodes)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from nodeprov.testbed.cluster import Testbed
from nodeprov.testbed.lifecycle import temporary
from tests.conftest import requires_root_namespaces
from tests.mirrors import LOCAL_MIRRORS
from tests.proof.test_prove import CLUSTER_VARS, invoke
from tests.report_schema import assert_valid
from tests.wheels.mirror import uv_index

pytestmark = pytest.mark.integration

THROTTLED = "node4"
# A loaded 2-core machine gives gloo pairs some 30 MB/s here, so the baseline is small and a
# slow pair must be far below a tenth of it (bandwidth_drop 0.9): 0.125 MB/s. 256 KiB at most
# keeps the throttled sweep at about half a minute.
RATE = "1mbit"
MAX_BYTES = 256 << 10


@pytest.fixture(scope="module")
def cluster() -> Iterator[Testbed]:
    reason = requires_root_namespaces()
    if reason:
        pytest.skip(reason)
    extra = {**CLUSTER_VARS, "job_max_bytes": MAX_BYTES, "pip_extra_index_url": [uv_index()]}
    with temporary(nodes=4, extra_vars=extra, shared=LOCAL_MIRRORS) as bed:
        code, out = invoke("apply", str(bed.inventory_path))  # torch, and the baseline
        assert code == 0, out
        yield bed


def test_a_throttled_node_is_named_before_the_rounds_end(cluster: Testbed,
                                                        tmp_path: Path) -> None:
    # tbf on the node's own end of its veth: everything it sends leaves at RATE, while the
    # kernel still says 10000 Mb/s (/sys/class/net/eth0/speed), as a bad cable or port would.
    cluster.exec(THROTTLED, "tc", "qdisc", "add", "dev", "eth0", "root", "tbf", "rate", RATE,
                 "burst", "32kbit", "latency", "400ms", check=True)
    try:
        code, out = invoke("verify", str(cluster.inventory_path), "--slow-nodes", "--json",
                           str(tmp_path / "verify.json"))
    finally:
        cluster.exec(THROTTLED, "tc", "qdisc", "del", "dev", "eth0", "root", check=True)
    print(out)  # the lines docs/verify.md shows
    report = json.loads((tmp_path / "verify.json").read_text())
    assert_valid(report)
    assert code == 1, out
    found = report["proofs"][0]["pairwise"]
    assert found["culprits"] == [THROTTLED] and found["unresolved"] == [], out
    # round 1 pairs node4 with node1, round 2 with node2 while node1 is fast with node3
    assert found["rounds_run"] == 2 and found["rounds_total"] == 3
    pairs = report["proofs"][0]["pairs"]
    assert len(pairs) == 4 and {pair["round"] for pair in pairs} == {1, 2}
    assert [THROTTLED in pair["nodes"] for pair in pairs] == [True, True, False, False]
    assert all(pair["ok"] and pair["link_bytes_per_s"] == 10000e6 / 8 for pair in pairs)
    assert [pair["slow"] for pair in pairs] == [True, True, False, False]
    # 0.125 MB/s against 1250 MB/s of link
    assert all(pair["of_link"] < 0.001 for pair in pairs[:2]), pairs
    assert f"FAILED slow node: {THROTTLED}: each of its pairs is slow" in out
    assert "in 2 of 3 rounds" in out and "stopped early" in out

    code, out = invoke("verify", str(cluster.inventory_path), "--slow-nodes", "--no-job")
    assert code == 2 and "drop --no-job" in out
