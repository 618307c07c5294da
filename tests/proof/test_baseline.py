"""The bandwidth baseline: record and compare."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from nodeprov.errors import InputError
from nodeprov.proof.baseline import (
    baseline_path,
    compare_to_baseline,
    kept_or_recorded,
    load_baseline,
    record_baseline,
)
from nodeprov.proof.results import JobResult, parse_result

RECORDED = Path(__file__).parents[1] / "job" / "data" / "result_gloo_2ranks.json"
RESULT = parse_result(RECORDED.read_text())
LARGEST = max(RESULT.sizes, key=lambda row: row.bytes)


def slower(result: JobResult, factor: float) -> JobResult:
    """The same run with every size's bus bandwidth times ``factor``."""
    return dataclasses.replace(result, sizes=tuple(
        dataclasses.replace(row, busbw_gbps=row.busbw_gbps * factor) for row in result.sizes))


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    path = baseline_path(tmp_path / "cluster.yaml")
    record_baseline(path, RESULT, nodes=("node1",), link_bytes_per_s=1.25e9)
    return path


def test_the_baseline_lives_beside_the_inventory(tmp_path: Path) -> None:
    assert baseline_path(tmp_path / "cluster.yaml") == tmp_path / "cluster.nodeprov-baseline.json"


def test_record_writes_busbw_per_size_and_refuses_a_failed_run(recorded: Path) -> None:
    data = json.loads(recorded.read_text())
    assert data["backend"] == "gloo" and data["world_size"] == 2
    assert data["sizes"][-1] == {"bytes": LARGEST.bytes, "busbw_gbps": LARGEST.busbw_gbps}
    assert [p.name for p in recorded.parent.iterdir()] == [recorded.name]  # no temp file left
    with pytest.raises(ValueError, match="a failed run is no baseline"):
        record_baseline(recorded, dataclasses.replace(RESULT, ok=False), nodes=("node1",))


def test_the_baseline_says_when_where_and_with_what_it_ran(recorded: Path) -> None:
    stored = load_baseline(recorded)
    assert stored is not None and stored.recorded.startswith("20")
    assert stored.nodes == ("node1",) and stored.torch == RESULT.torch
    assert stored.nccl == RESULT.nccl and stored.link_bytes_per_s == 1.25e9


def test_a_baseline_written_before_those_fields_still_reads(recorded: Path) -> None:
    older = json.loads(recorded.read_text())
    for key in ("nodes", "torch", "nccl", "link_bytes_per_s", "hostnames"):
        del older[key]
    recorded.write_text(json.dumps(older))
    stored = load_baseline(recorded)
    assert stored is not None and stored.busbw_gbps[LARGEST.bytes] == LARGEST.busbw_gbps
    assert (stored.nodes, stored.torch, stored.nccl, stored.link_bytes_per_s) == (
        (), None, None, None)


def test_apply_keeps_the_baseline_a_slower_run_fell_below(recorded: Path) -> None:
    # The case: a throttled link made apply replace 0.31 GB/s with 0.046 silently.
    before = recorded.read_text()
    stored, note, problem = kept_or_recorded(recorded, slower(RESULT, 0.15), drop=0.3,
                                             rebaseline=False, nodes=("node1",))
    assert recorded.read_text() == before and note is None
    assert stored == load_baseline(recorded)
    assert problem is not None and "(-85%, more than the allowed 30%)" in problem
    assert "the baseline is kept: `nodeprov apply --rebaseline` records this run" in problem


def test_apply_keeps_the_baseline_a_run_within_the_allowance_met(recorded: Path) -> None:
    before = recorded.read_text()
    for factor in (0.8, 2.0):  # neither followed down nor up: only --rebaseline moves it
        assert kept_or_recorded(recorded, slower(RESULT, factor), drop=0.3, rebaseline=False,
                                nodes=("node1",))[1:] == (None, None)
    assert recorded.read_text() == before


def test_apply_records_a_first_baseline_a_new_shape_or_when_asked(tmp_path: Path,
                                                                   recorded: Path) -> None:
    first = baseline_path(tmp_path / "new.yaml")
    stored, note, problem = kept_or_recorded(first, RESULT, drop=0.3, rebaseline=False,
                                             nodes=("node1",))
    assert note == "bandwidth baseline recorded in new.nodeprov-baseline.json (the first)"
    assert stored == load_baseline(first) and problem is None
    bigger = dataclasses.replace(RESULT, nnodes=3, world_size=3)
    stored, note, _ = kept_or_recorded(first, bigger, drop=0.3, rebaseline=False,
                                       nodes=("a", "b", "c"))
    assert note is not None and note.endswith("(the old one was 2 ranks on 1 node (gloo))")
    assert stored is not None and stored.nodes == ("a", "b", "c")
    slow = slower(RESULT, 0.1)
    stored, note, problem = kept_or_recorded(recorded, slow, drop=0.3, rebaseline=True,
                                             nodes=("node1",))
    assert note is not None and note.endswith("as asked (--rebaseline)") and problem is None
    assert stored is not None and stored.busbw_gbps[LARGEST.bytes] == pytest.approx(
        LARGEST.busbw_gbps * 0.1)


def test_no_baseline_means_nothing_to_compare(tmp_path: Path) -> None:
    assert compare_to_baseline(tmp_path / "none.json", RESULT, drop=0.3) is None


def test_a_drop_within_the_allowance_passes(recorded: Path) -> None:
    assert compare_to_baseline(recorded, RESULT, drop=0.3) is None
    assert compare_to_baseline(recorded, slower(RESULT, 0.75), drop=0.3) is None
    assert compare_to_baseline(recorded, slower(RESULT, 3.0), drop=0.3) is None


def test_a_larger_drop_at_the_largest_size_fails_in_one_line(recorded: Path) -> None:
    line = compare_to_baseline(recorded, slower(RESULT, 0.5), drop=0.3)
    assert line is not None and "\n" not in line
    now, before = LARGEST.busbw_gbps * 0.5, LARGEST.busbw_gbps
    assert line.startswith(f"busbw at 1 MiB fell to {now:.2f} GB/s from {before:.2f} GB/s")
    assert "(-50%, more than the allowed 30%)" in line


def test_only_the_largest_common_size_counts(recorded: Path) -> None:
    # Small messages measure latency: a slower 8-byte all-reduce alone is no drop.
    small_slow = dataclasses.replace(RESULT, sizes=(
        dataclasses.replace(RESULT.sizes[0], busbw_gbps=0.0), *RESULT.sizes[1:]))
    assert compare_to_baseline(recorded, small_slow, drop=0.3) is None
    # A run with a smaller max_bytes compares at its own largest size.
    shorter = slower(dataclasses.replace(RESULT, sizes=RESULT.sizes[:-1]), 0.1)
    line = compare_to_baseline(recorded, shorter, drop=0.3)
    assert line is not None and line.startswith("busbw at 512 KiB fell")


def test_another_cluster_shape_asks_for_a_new_baseline(recorded: Path) -> None:
    bigger = dataclasses.replace(RESULT, nnodes=3, world_size=3)
    line = compare_to_baseline(recorded, bigger, drop=0.3)
    assert line == ("bandwidth baseline cluster.nodeprov-baseline.json was recorded on 2 ranks "
                    "on 1 node (gloo) up to 1 MiB; this run is 3 ranks on 3 nodes (gloo) up to "
                    "1 MiB: record a new baseline to compare")


def test_an_unreadable_baseline_is_an_input_error_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "x.nodeprov-baseline.json"
    path.write_text("{not json")
    with pytest.raises(InputError, match="x.nodeprov-baseline.json: cannot read"):
        load_baseline(path)
    path.write_text('{"recorded": "today"}')
    with pytest.raises(InputError, match="lacks or garbles 'backend'"):
        compare_to_baseline(path, RESULT, drop=0.3)

