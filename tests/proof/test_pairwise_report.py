"""The pairs and the slow nodes in the proof's JSON (schema) and on the HTML page."""

from __future__ import annotations

import pytest

from nodeprov.htmlreport.page import render_html
from nodeprov.proof.matrix import Matrix
from nodeprov.proof.prove import Proof
from tests.htmlreport.dom import Dom
from tests.htmlreport.reports import recorded
from tests.proof.test_pairwise import FakeJobs, hosts, run, throttled
from tests.report_schema import assert_valid


def test_a_slow_node_fails_the_proof_and_shows_in_json_and_html() -> None:
    fake = FakeJobs(throttled("node3"))
    found = run(fake, hosts(4), slow_nodes=True)
    proof = Proof(Matrix(tuple(f"node{n}" for n in range(1, 5)), (), ()), None,
                  pairs=found.pairs, pairwise=found)
    data = proof.to_json()
    assert not proof.ok and data["pairwise"]["culprits"] == ["node3"]
    assert data["pairwise"]["rounds_run"] == 2 and data["pairwise"]["rounds_total"] == 3
    slowest = data["pairs"][0]
    assert slowest["slow"] and slowest["of_link"] == pytest.approx(0.01 / 1.25)
    assert slowest["link_bytes_per_s"] == 10000 * 1e6 / 8 and slowest["round"] in (1, 2)
    assert any(line.startswith("slow node: node3: ") for line in proof.failures())

    report = recorded("verify-3")
    report["proofs"][0].update(pairs=data["pairs"], pairwise=data["pairwise"],
                              failures=data["failures"], ok=False)
    assert_valid(report)
    html = render_html(report)
    named = [item for item in Dom.of(html).find("li", "failed")
             if "".join(item.text).startswith("slow node: node3: ")]
    assert len(named) == 2  # among the proof's problems, and under the pairs
    assert "2 of 3 rounds of disjoint pairs run at once" in html
    assert "node1 + node3: 0.01 GB/s busbw at 1 MiB = 0.008 of 10 Gb/s: slow" in html
