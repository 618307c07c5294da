import os
from pathlib import Path

import pytest

from nodeprov.errors import InputError
from nodeprov.testbed.layout import NODE_PRIVATE_TREES, Layout, checked_dir


@pytest.mark.parametrize("tree", NODE_PRIVATE_TREES)
def test_a_directory_inside_a_node_private_tree_is_refused(tree: str) -> None:
    with pytest.raises(InputError, match=f"inside {tree}, which every node replaces") as error:
        checked_dir(Path(tree) / "nodeprov-testbed")
    assert error.value.exit_code == 2


def test_the_tree_itself_and_the_root_are_refused() -> None:
    with pytest.raises(InputError, match="inside /var"):
        checked_dir(Path("/var"))
    with pytest.raises(InputError, match="/ cannot hold a testbed"):
        checked_dir(Path("/"))


@pytest.mark.skipif(not os.access("/srv", os.W_OK), reason="needs a writable /srv")
def test_a_symlink_into_a_private_tree_is_refused(tmp_path: Path) -> None:
    # tmp_path lies under /tmp, itself private to each node.
    link = Path("/srv") / f"nodeprov-test-link-{tmp_path.name}"
    link.symlink_to(tmp_path)
    try:
        with pytest.raises(InputError, match="inside /tmp"):
            checked_dir(link)
    finally:
        link.unlink()


def test_characters_overlayfs_options_cannot_hold_are_refused() -> None:
    with pytest.raises(InputError, match="overlayfs mount options"):
        checked_dir(Path("/srv/a,b"))
    with pytest.raises(InputError, match="overlayfs mount options"):
        checked_dir(Path("/srv/a:b"))


def test_a_plain_directory_is_accepted_and_laid_out() -> None:
    layout = Layout(checked_dir(Path("/srv/nodeprov-testbed")))
    assert layout.ssh_config == Path("/srv/nodeprov-testbed/ssh_config")
    assert layout.node_dir("node2") == Path("/srv/nodeprov-testbed/nodes/node2")
    assert layout.files[-1] == layout.state_file  # removed last by `down`
