from pathlib import Path

import pytest
import yaml

from nodeprov.errors import InputError
from nodeprov.inventory import load_inventory
from nodeprov.testbed.inventory_file import inventory, parse_vars, render
from nodeprov.testbed.layout import Layout


def test_vars_are_parsed_as_yaml() -> None:
    assert parse_vars(["pip_find_links=[/opt/wheels]", "nodes=8", "flag=true", "empty="]) == {
        "pip_find_links": ["/opt/wheels"], "nodes": 8, "flag": True, "empty": None}


@pytest.mark.parametrize("bad", ["novalue", "=x", "two words=x", "k=[unclosed"])
def test_bad_vars_are_input_errors(bad: str) -> None:
    with pytest.raises(InputError, match="--var"):
        parse_vars([bad])


def test_extra_vars_may_not_replace_the_testbeds_own() -> None:
    with pytest.raises(InputError, match="node_subnet is set by the testbed"):
        inventory("10.77.3.0/24", Layout(Path("/srv/tb")), {}, {"node_subnet": "10.0.0.0/8"})


def test_rendered_inventory_is_nodeprovs_format(tmp_path: Path) -> None:
    layout = Layout(tmp_path)
    data = inventory("10.77.3.0/24", layout, {"node1": "10.77.3.2", "node2": "10.77.3.3"},
                     {"pip_find_links": ["/opt/wheels"]})
    text = render(data, layout)
    assert text.startswith("# written by `nodeprov testbed up`")
    assert yaml.safe_load(text) == {"all": {
        "vars": {"node_subnet": "10.77.3.0/24", "ansible_user": "root",
                 "ansible_ssh_private_key_file": str(tmp_path / "id_ed25519"),
                 "ssh_config_file": str(tmp_path / "ssh_config"),
                 "pip_find_links": ["/opt/wheels"]},
        "hosts": {"node1": {"ansible_host": "10.77.3.2"}, "node2": {"ansible_host": "10.77.3.3"}},
    }}
    layout.inventory.write_text(text)
    layout.ssh_config.write_text("")  # `up` writes it too: an inventory naming none is refused
    loaded = load_inventory(layout.inventory)
    assert [(host.name, host.address, host.user) for host in loaded.hosts] == [
        ("node1", "10.77.3.2", "root"), ("node2", "10.77.3.3", "root")]
    assert loaded.hosts[0].vars["ssh_config_file"] == str(tmp_path / "ssh_config")
