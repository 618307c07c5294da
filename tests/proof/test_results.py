"""Reading the job's result on the admin side."""

import json
from pathlib import Path
from typing import Any

import pytest

from nodeprov.proof.results import TABLE_HEADER, parse_result, result_json_in, table_rows, verdict
from nodeprov.util.units import human_bytes

RECORDED = (Path(__file__).parents[1] / "job" / "data" / "result_gloo_2ranks.json").read_text()


def changed(**fields: Any) -> str:
    data = json.loads(RECORDED)
    data.update(fields)
    return json.dumps(data)


def test_recorded_result_parses_into_typed_values() -> None:
    result = parse_result(RECORDED)
    assert (result.ok, result.backend, result.world_size, result.nnodes) == (True, "gloo", 2, 1)
    assert result.hostnames == ("vm", "vm")
    assert result.cuda is None and result.nccl is None
    assert result.ddp_ok and result.ddp_max_abs_diff == 0.0
    assert [size.bytes for size in result.sizes][-1] == 1024 * 1024
    assert all(size.wrong == 0 and size.busbw_gbps > 0 for size in result.sizes)


def test_table_has_one_row_per_size_in_header_order() -> None:
    rows = table_rows(parse_result(RECORDED))
    assert len(rows) == 10 and all(len(row) == len(TABLE_HEADER) for row in rows)
    assert rows[0][:2] == ("8 B", "2")
    assert rows[-1][0] == "1 MiB" and rows[-1][-1] == "0"


def test_passing_verdict_names_scope_and_peak() -> None:
    line = verdict(parse_result(RECORDED))
    assert line.startswith("PASS: 1 node, 2 ranks (gloo): DDP replicas in sync")
    assert "peak busbw" in line and "\n" not in line


def test_one_ranks_verdict_claims_no_bus_bandwidth() -> None:
    # nccl-tests' busbw is algbw * 2(n-1)/n: 0 for one rank, whatever algbw the copy shows
    line = verdict(parse_result(changed(world_size=1)))
    assert line.endswith("one rank sends nothing, so no bus bandwidth to measure")


def test_failing_verdict_names_what_failed() -> None:
    data = json.loads(RECORDED)
    data["sizes"][3]["wrong"] = 7
    data.update(ok=False, wrong=7, ddp={"ok": False, "max_abs_diff": 0.5})
    line = verdict(parse_result(json.dumps(data)))
    assert line == ("FAIL: 1 node, 2 ranks (gloo): DDP replicas differ by up to 0.5; "
                    "7 wrong all-reduce results at 512 B")


def test_nccl_verdict_shows_the_nccl_version() -> None:
    line = verdict(parse_result(changed(backend="nccl", nccl="2.21.5", cuda="12.8")))
    assert "(nccl 2.21.5)" in line


@pytest.mark.parametrize(("text", "message"), [
    ("not json", "not JSON"),
    (changed(ok="yes"), "ok is 'yes', expected bool"),
    (changed(world_size=True), "world_size is True, expected int"),
    (changed(ddp={"ok": True}), "no field ddp.max_abs_diff"),
    (changed(sizes=[{"bytes": 8}]), "no field sizes[0].count"),
    ("[]", "no field ddp"),
    # Python's json reads these words; a report with them is no JSON, and the chart divides
    (changed(duration_s=float("nan")), "NaN is no JSON number"),
    (changed(ddp={"ok": False, "max_abs_diff": float("inf")}), "Infinity is no JSON number"),
    # beyond a double's exact range: float() of it overflows, a sum of a few is inf
    (changed(duration_s=1e308), "the number 1e+308 is beyond 2**53"),
    (changed(wrong=10 ** 400), "a number of 401 digits"),
])
def test_malformed_results_name_the_field(text: str, message: str) -> None:
    with pytest.raises(ValueError, match="job result") as error:
        parse_result(text)
    assert message in str(error.value)


def test_result_line_is_found_in_stdout() -> None:
    stdout = f"warming up\nNODEPROV_RESULT {RECORDED.strip()}\nbye\n"
    assert result_json_in(stdout) == RECORDED.strip()
    assert result_json_in("no result here") is None


def test_human_bytes_uses_binary_units_only_when_exact() -> None:
    assert [human_bytes(n) for n in (4, 1024, 3 * 1024**2, 2 * 1024**3, 1536)] == [
        "4 B", "1 KiB", "3 MiB", "2 GiB", "1536 B"]
