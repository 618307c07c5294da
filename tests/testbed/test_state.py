import json
from pathlib import Path

import pytest

from nodeprov.errors import InputError
from nodeprov.testbed.processes import ProcessId
from nodeprov.testbed.state import Member, State


def sample() -> State:
    return State(dir="/srv/tb", created_dir=True, subnet="10.77.3.0/24", bridge="ntabcdefbr",
                 bridge_address="10.77.3.1/24",
                 nodes=[Member("node1", "10.77.3.2/24", "ntabcdef-node1", "ntabcdefn1",
                               init=ProcessId(42, 1000), launcher=ProcessId(41, 999))],
                 outsider=Member("outsider", "10.9.9.2/24", "ntabcdef-outsider", "ntabcdefo"),
                 outsider_subnet="10.9.9.0/24")


def test_state_round_trips_through_its_file(tmp_path: Path) -> None:
    state = sample()
    state.save(tmp_path / "state.json")
    assert State.load(tmp_path / "state.json") == state
    assert [path.name for path in tmp_path.iterdir()] == ["state.json"]  # no temporary left


def test_member_lookup_and_address() -> None:
    state = sample()
    assert state.member("outsider").ip == "10.9.9.2"
    assert [member.name for member in state.members] == ["node1", "outsider"]
    with pytest.raises(InputError, match="no node 'node9'.*it has: node1, outsider"):
        state.member("node9")


def test_missing_or_foreign_state_files_are_input_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no testbed at .* create one with"):
        State.load(tmp_path / "state.json")
    (tmp_path / "state.json").write_text("{not json")
    with pytest.raises(InputError, match="not a testbed state file"):
        State.load(tmp_path / "state.json")
    (tmp_path / "state.json").write_text(json.dumps({"version": 99}))
    with pytest.raises(InputError, match="state format 99"):
        State.load(tmp_path / "state.json")
