"""``nodeprov fabric LOG...`` through the command line: exit codes 0 / 3 / 2, the JSON report
against the schema, untrusted log text escaped, unreadable input named by file and line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from nodeprov.cli import app
from nodeprov.errors import EXIT_BAD_INPUT, EXIT_OK, EXIT_SLOWER_PATH, InputError
from nodeprov.htmlreport import render_html
from tests.report_schema import assert_valid

LOGS = Path(__file__).parents[1] / "data" / "nccl-logs"


def fabric(*args: str | Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["fabric", *map(str, args)], env={"COLUMNS": "200"})
    return result.exit_code, result.stdout, result.stderr


def test_fast_fabric_is_exit_0() -> None:
    code, out, _ = fabric(LOGS / "nccl-707-ib-gdrdma.log")
    assert code == EXIT_OK
    assert "10-90-43-152 [pid 120890 [0], pid 120890 [1], pid 120890 [3], pid 120890 [2]]: " \
           "IB; GPUDirect RDMA yes; intra-node not said" in out
    assert out.rstrip().endswith("verdict: fast-fabric: the fast fabric is used")


def test_slower_path_is_its_own_exit_code_with_causes_and_repairs() -> None:
    code, out, _ = fabric(LOGS / "vlmevalkit-975-ib-disabled-container.log")
    assert code == EXIT_SLOWER_PATH == 3
    assert "  ib-disabled: " in out and "NCCL_IB_DISABLE set by environment to 1." in out
    assert "    repair: remove NCCL_IB_DISABLE=1" in out
    assert "not read from a log (they need the nodes' facts, --facts): port-down, acs" in out


def test_json_report_follows_the_schema(tmp_path: Path) -> None:
    code, out, _ = fabric(LOGS / "nccl-1537-roce-gdr-disabled.log",
                          LOGS / "torchtitan-1570-torchrun-libfabric.log", "--json", "-")
    report = json.loads(out)  # '-': the report alone on stdout
    assert_valid(report)
    assert (code, report["command"], report["ok"], report["verdict"]) == (
        EXIT_SLOWER_PATH, "fabric", False, "slower-path")
    roce, efa = report["nodes"]
    assert (roce["node"], roce["network"], roce["gdr"], roce["intra"]) == (
        "hostname1", "RoCE", False, [])
    assert roce["devices"][0] == {"name": "mlx5_0", "link_layer": "RoCE", "port": 1}
    assert [c["code"] for c in roce["causes"]] == ["no-gdr-module"]
    assert roce["causes"][0]["evidence"].endswith(
        "NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'")
    assert efa["ranks"] == [{"rank": "rank 0", "network": "EFA", "gdr": True, "nccl": None}]


def test_a_missing_file_is_exit_2_naming_it(tmp_path: Path) -> None:
    code, _, err = fabric(tmp_path / "absent.log")
    assert code == EXIT_BAD_INPUT
    assert err == f"nodeprov: {tmp_path / 'absent.log'}: cannot read it: No such file or " \
                  "directory\n"


def test_binary_input_is_exit_2_naming_file_and_line(tmp_path: Path) -> None:
    log = tmp_path / "train.log.gz"
    log.write_bytes(b"n1:1:1 [0] NCCL INFO Using network IB\n\x1f\x8b\x08\x00\x00binary\n")
    code, _, err = fabric(log)
    assert code == EXIT_BAD_INPUT
    assert err.startswith(f"nodeprov: {log}:2: a NUL byte: this is not a text log")


def test_a_log_without_nccl_lines_says_how_to_get_them(tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text("epoch 1 loss 0.3\n")
    code, _, err = fabric(log)
    assert code == EXIT_BAD_INPUT and "NCCL_DEBUG=INFO" in err


def test_log_text_is_escaped(tmp_path: Path) -> None:
    """A log is untrusted: a terminal escape in a quoted line is shown, not obeyed."""
    log = tmp_path / "train.log"
    log.write_text("n1:1:1 [0] NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0> \x1b[2J\n"
                   "n1:1:1 [0] NCCL INFO Using network Socket\n")
    code, out, _ = fabric(log)
    assert code == EXIT_SLOWER_PATH and "\x1b" not in out and "\\x1b[2J" in out


def test_report_refuses_to_draw_a_fabric_report(tmp_path: Path) -> None:
    """No HTML page is drawn for it yet: one line and exit 2, not a traceback."""
    saved = tmp_path / "fabric.json"
    assert fabric(LOGS / "nccl-707-ib-gdrdma.log", "--json", saved)[0] == EXIT_OK
    result = CliRunner().invoke(app, ["report", str(saved), "--html", str(tmp_path / "f.html")])
    assert result.exit_code == EXIT_BAD_INPUT
    assert result.stderr == f"nodeprov: {saved}: a fabric report has no HTML page: nodeprov " \
                            "fabric prints it, and --json keeps it\n"
    # the page's own guard, for a caller that skips the command's: the kinds it draws
    with pytest.raises(InputError, match=r"a fabric report has no HTML page \(pages are drawn "
                                         r"for apply, facts, verify, run\)"):
        render_html(json.loads(saved.read_text()), str(saved))
