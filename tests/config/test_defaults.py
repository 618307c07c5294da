"""The command line and ansible.cfg as defaults of the inventory variables they stand for."""

from __future__ import annotations

from pathlib import Path

from nodeprov.config import read_settings
from nodeprov.config.defaults import CommandLine, Default, host_defaults


def test_the_command_line_beats_the_configuration_which_beats_nothing(tmp_path: Path) -> None:
    (tmp_path / "ansible.cfg").write_text(
        "[defaults]\nremote_user = cfg-user\nprivate_key_file = keys/id\ntimeout = 30\n"
        "remote_port = 2222\n[privilege_escalation]\nbecome = True\n"
        "[ssh_connection]\nssh_args = -o ProxyJump=bastion\n")
    settings = read_settings({"HOME": str(tmp_path), "ANSIBLE_BECOME_PASS": "pw"}, tmp_path)
    cfg = f"{tmp_path}/ansible.cfg"
    assert host_defaults(settings, CommandLine()) == {
        "ansible_user": Default("cfg-user", f"{cfg}: [defaults] remote_user"),
        "ansible_ssh_private_key_file": Default(f"{tmp_path}/keys/id",
                                                f"{cfg}: [defaults] private_key_file"),
        "ansible_port": Default(2222, f"{cfg}: [defaults] remote_port"),
        "ansible_timeout": Default(30, f"{cfg}: [defaults] timeout"),
        "ansible_become": Default(True, f"{cfg}: [privilege_escalation] become"),
        "ansible_become_password": Default("pw", "environment: ANSIBLE_BECOME_PASS"),
        "ansible_ssh_args": Default("-o ProxyJump=bastion", f"{cfg}: [ssh_connection] ssh_args"),
    }
    given = host_defaults(settings, CommandLine(user="cli", private_key="/k", timeout=5,
                                                become_user="root", become_password="typed"))
    assert given["ansible_user"] == Default("cli", "-u")
    assert given["ansible_ssh_private_key_file"] == Default("/k", "--private-key")
    assert given["ansible_timeout"] == Default(5, "-T")
    assert given["ansible_become_user"] == Default("root", "--become-user")
    assert given["ansible_become_password"] == Default("typed", "-K")


def test_nothing_set_gives_no_defaults(tmp_path: Path) -> None:
    settings = read_settings({"HOME": str(tmp_path)}, tmp_path)
    assert host_defaults(settings, CommandLine()) == {}
