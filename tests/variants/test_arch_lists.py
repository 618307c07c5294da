"""nodeprov's table of what each torch release was built for, against what released wheels
report (tests/data/torch-arch-lists, sources in its README)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from nodeprov.variants.fit import parse_arch_list
from nodeprov.variants.published import CUDA_BUILDS, X86

DATA = Path(__file__).parents[1] / "data" / "torch-arch-lists"


def as_reported(arch_list: str) -> list[str]:
    """A TORCH_CUDA_ARCH_LIST as get_arch_list() prints it: the SASS, then the PTX.

    >>> as_reported("8.6;9.0+PTX")
    ['sm_86', 'sm_90', 'compute_90']
    """
    built = parse_arch_list(arch_list)
    return ([f"sm_{major}{minor}" for (major, minor), _ in built]
            + [f"compute_{major}{minor}" for (major, minor), ptx in built if ptx])


def linux_lists(text: str) -> dict[tuple[str, str], list[str]]:
    """The Linux lists of a "### PyTorch 2.7.1 / #### CUDA 12.8 / Linux:" report, by
    (release, variant)."""
    found = {}
    release = variant = ""
    lines = text.splitlines()
    for line, following in zip(lines, [*lines[1:], ""], strict=True):
        if match := re.fullmatch(r"### PyTorch (\d+\.\d+)(?:\.\d+)?", line):
            release = match.group(1)
        elif match := re.fullmatch(r"#### CUDA (\d+)\.(\d)", line):
            variant = f"cu{match.group(1)}{match.group(2)}"
        elif line == "Linux:":
            found[release, variant] = ast.literal_eval(following)
    return found


def warned_list(text: str) -> list[str]:
    match = re.search(r"supports CUDA capabilities ([\w ]+)\.", text)
    assert match, "no 'supports CUDA capabilities' line"
    return match.group(1).split()


CORRIDORKEY = linux_lists((DATA / "corridorkey-pr141-torch-2.10-2.7.1.txt").read_text())


def test_the_report_holds_the_four_linux_lists() -> None:
    assert sorted(CORRIDORKEY) == [("2.10", "cu126"), ("2.10", "cu128"), ("2.7", "cu126"),
                                   ("2.7", "cu128")]


@pytest.mark.parametrize(("release", "variant"), sorted(CORRIDORKEY))
def test_linux_wheels_were_built_for_what_the_table_says(release: str, variant: str) -> None:
    # 2.7.1 cu128 carries compute_120 (PTX) and 2.10 cu128 does not: the table must say which
    assert as_reported(CUDA_BUILDS[release][X86][variant]) == CORRIDORKEY[release, variant]


def test_torch_2_0_cu118_starts_at_kepler_and_has_no_ptx() -> None:
    text = (DATA / "deepprep-issue233-torch-2.0.1-cu118.txt").read_text()
    assert as_reported(CUDA_BUILDS["2.0"][X86]["cu118"]) == warned_list(text)


def test_cu124_builds_after_the_ptx_removal_have_none() -> None:
    # No released 2.5.x/2.6.0+cu124 list was found: the table's rests on the build scripts
    # (variants/published.py's docstring). This nightly of main, built after 12.4's PTX was removed
    # there and before any release script could add it back, is the nearest recorded build:
    # its list is the table's 2.6 cu124, without the compute_90 the table once claimed.
    text = (DATA / "pytorch-issue167244-nightly-2.7.0.dev20250310-cu124.txt").read_text()
    assert "no kernel image is available" in text
    assert as_reported(CUDA_BUILDS["2.6"][X86]["cu124"]) == warned_list(text)
