"""ssh arguments mapped onto nodeprov's SSH, on the ssh_args of the real ansible.cfg files in
tests/data/ansible-cfg and the bastion line kubespray ships commented out."""

from __future__ import annotations

import pytest

from nodeprov.inventory.sshargs import SshArgs, first_of, parse_ssh_args


@pytest.mark.parametrize(("text", "expected"), [
    # deepops
    ("-o ControlMaster=auto -o ControlPersist=30m -o ConnectionAttempts=100 "
     "-o UserKnownHostsFile=/dev/null",
     SshArgs(known_hosts_files=("/dev/null",), not_applied=(
         "-o ControlMaster=auto", "-o ControlPersist=30m", "-o ConnectionAttempts=100"))),
    # kubespray, for bastion hosts
    ("-F ./ssh-bastion.conf -o ControlMaster=auto -o ControlPersist=30m "
     "-o StrictHostKeyChecking=no",
     SshArgs(ssh_config_file="./ssh-bastion.conf", strict_host_keys=False, not_applied=(
         "-o ControlMaster=auto", "-o ControlPersist=30m"))),
    ("-C -o ProxyJump=admin@bastion:2222 -p 2200 -i ~/.ssh/key -o 'StrictHostKeyChecking yes'",
     SshArgs(jump="admin@bastion:2222", port=2200, strict_host_keys=True,
             not_applied=("-C", "-i ~/.ssh/key"))),
    # the first of ProxyCommand and ProxyJump keeps the other out, as in ssh's readconf.c
    ("-o 'ProxyCommand=ssh -W %h:%p -q jump' -J ignored -oPort=22 -o Port=2222",
     SshArgs(proxy_command="ssh -W %h:%p -q jump", port=22,
             not_applied=("-J ignored (ProxyCommand came first)",))),
    # ssh's own way to switch a proxy off, in ssh_args or ssh_config (ssh_config(5))
    ("-o ProxyCommand=none", SshArgs(proxy_command="none")),
    ("-o ProxyCommand=NONE -o ProxyJump=bastion",
     SshArgs(proxy_command="none", not_applied=("-o ProxyJump=bastion (ProxyCommand came "
                                                "first)",))),
    ("-o UserKnownHostsFile='~/.ssh/a ~/.ssh/b' -o StrictHostKeyChecking=accept-new",
     SshArgs(known_hosts_files=("~/.ssh/a", "~/.ssh/b"), strict_host_keys=False)),
    ("-o ProxyJump=none", SshArgs(jump="none")),
])
def test_ssh_args_map_onto_nodeprovs_ssh(text: str, expected: SshArgs) -> None:
    assert parse_ssh_args(text) == expected


@pytest.mark.parametrize(("text", "message"), [
    ("-o ProxyJump=bad;host", "ProxyJump 'bad;host': 'bad;host' is not"),
    ("-p 0", "Port '0'"),
    ("-o StrictHostKeyChecking=maybe", "StrictHostKeyChecking 'maybe': expected yes, no"),
    ("-o 'ProxyCommand=nc %h\n22'", "ProxyCommand 'nc %h\\\\n22': .* newline"),
    ("-o 'ProxyCommand= '", "ProxyCommand '': expected a command, or none"),
])
def test_a_value_nodeprov_cannot_use_is_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_ssh_args(text)


def test_the_first_hop_of_several_argument_strings_wins_whole() -> None:
    # ansible_ssh_common_args' ProxyCommand=none comes before the extra args' -J on ssh's
    # command line: ssh makes no hop at all
    merged = first_of([parse_ssh_args("-o ProxyCommand=none"), parse_ssh_args("-J bastion")])
    assert (merged.jump, merged.proxy_command) == (None, "none")
