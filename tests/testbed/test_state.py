import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from nodeprov.errors import InputError
from nodeprov.testbed.naming import Names
from nodeprov.testbed.processes import ProcessId
from nodeprov.testbed.state import Member, State


def sample(directory: str = "/srv/tb") -> State:
    names = Names.for_dir(Path(directory))
    return State(dir=directory, created_dir=True, subnet="10.77.3.0/24", bridge=names.bridge,
                 bridge_address="10.77.3.1/24",
                 nodes=[Member("node1", "10.77.3.2/24", names.netns("node1"),
                               names.veth("node1"), init=ProcessId(42, 1000),
                               launcher=ProcessId(41, 999))],
                 outsider=Member("outsider", "10.9.9.2/24", names.netns("outsider"),
                                 names.veth("outsider")),
                 outsider_subnet="10.9.9.0/24", shared=["/opt/wheels"])


def test_state_round_trips_through_its_file(tmp_path: Path) -> None:
    state = sample(str(tmp_path))
    state.save(tmp_path / "state.json")
    assert State.load(tmp_path / "state.json") == state
    assert [path.name for path in tmp_path.iterdir()] == ["state.json"]  # no temporary left


# Issue #23 point 9: a forged state.json deleted an arbitrary link and netns and killed an
# arbitrary process; the state is trusted only in root's own files, naming its own prefix.

@pytest.mark.parametrize("forged", [
    {"bridge": "eth0"},
    {"nodes": [{"netns": "production"}]},
    {"nodes": [{"veth": "ntabcdefn1"}]},  # another testbed's
    {"nodes": [{"name": "node1; reboot"}]},
    {"dir": "/srv/elsewhere"},
])
def test_a_state_naming_what_is_not_this_testbeds_is_refused(tmp_path: Path,
                                                            forged: dict[str, Any]) -> None:
    data = asdict(sample(str(tmp_path)))
    for key, value in forged.items():
        if key == "nodes":
            data["nodes"][0].update(value[0])
        else:
            data[key] = value
    (tmp_path / "state.json").write_text(json.dumps(data))
    with pytest.raises(InputError, match="none of this testbed's|no testbed node's name|made "
                                         "for '/srv/elsewhere'"):
        State.load(tmp_path / "state.json")


@pytest.mark.parametrize("weak", ["folder writable by others", "file writable by group",
                                  "file of another user", "file a symlink"])
def test_a_state_file_others_could_write_is_refused(tmp_path: Path, weak: str) -> None:
    sample(str(tmp_path)).save(tmp_path / "state.json")
    state_file = tmp_path / "state.json"
    if weak == "folder writable by others":
        tmp_path.chmod(0o777)
    elif weak == "file writable by group":
        state_file.chmod(0o664)
    elif weak == "file of another user":
        os.chown(state_file, 65534, 65534)
    else:
        real = tmp_path / "real.json"
        state_file.rename(real)
        state_file.symlink_to(real)
    with pytest.raises(InputError, match="trusted only"):
        State.load(state_file)


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
