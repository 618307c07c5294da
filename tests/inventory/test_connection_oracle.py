"""Which user, port, key, timeout, jump host and host-key policy a host gets, from its inventory
variables, -e, the command line, ANSIBLE_* variables and ansible.cfg, against Ansible's own
answer: the ssh command line ``ansible -m ping -vvv`` runs (ssh takes the first value of each
option, as nodeprov reads them). The nodes are addresses nothing listens on, behind a jump host
that does not resolve: Ansible's ssh fails at once, after printing its command line."""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from nodeprov.config.defaults import AnsibleOptions, CommandLine
from nodeprov.inventory.extravars import parse_extra_vars
from nodeprov.inventory.opening import Surroundings, open_inventory
from nodeprov.util.redact import Redactor
from tests.inventory.oracle import ANSIBLE_BIN

CFG = """[defaults]
remote_user = cfguser
private_key_file = keys/id_cfg
timeout = 7
remote_port = 2222
host_key_checking = False
[ssh_connection]
ssh_args = -o ControlMaster=no -o ProxyJump=jump.invalid
"""
HOSTS = """[g]
h1 ansible_host=127.0.0.11
h2 ansible_host=127.0.0.12 ansible_user=invuser ansible_port=2200 ansible_ssh_timeout=4
h3 ansible_host=127.0.0.13 ansible_ssh_private_key_file={key} ansible_host_key_checking=true
h4 ansible_host=127.0.0.14 ansible_ssh_common_args='-o ProxyJump=other.invalid -p 2000'
[all:vars]
node_subnet=127.0.0.0/8
"""
SHORT = {"-p": "port", "-J": "proxyjump", "-l": "user"}
# (name, ansible.cfg, environment, command line words, nodeprov's options)
CASES: list[tuple[str, str | None, dict[str, str], list[str], dict[str, Any]]] = [
    ("cfg", CFG, {}, [], {}),
    ("cli-beats-cfg", CFG, {}, ["-u", "cliuser", "-T", "3", "--private-key", "cli.key"],
     {"user": "cliuser", "timeout": 3, "private_key": "cli.key"}),
    ("env-beats-cfg", CFG, {"ANSIBLE_REMOTE_USER": "envuser", "ANSIBLE_TIMEOUT": "5",
                            "ANSIBLE_SSH_ARGS": "-o ProxyJump=envjump.invalid -p 2100"}, [], {}),
    ("extra-vars-beat-all", CFG, {},
     ["-u", "cliuser", "-e", "ansible_user=extra ansible_port=2300"],
     {"user": "cliuser", "extra": "ansible_user=extra ansible_port=2300"}),
    ("ssh-section-host-key-checking", CFG + "host_key_checking = True\n", {}, [], {}),
    ("no-cfg", None, {"ANSIBLE_SSH_COMMON_ARGS": "-o ProxyJump=common.invalid"}, [], {}),
]


def ansible_commands(folder: Path, env: dict[str, str],
                     words: list[str]) -> dict[str, dict[str, str]]:
    """Each host's ssh options as Ansible passes them, the first value of each (ssh's rule)."""
    program = ANSIBLE_BIN / "ansible"
    if not program.exists():
        pytest.skip("ansible-core is not installed (pip install -e '.[test]')")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    done = subprocess.run([str(program), "all", "-i", "hosts.ini", "-m", "ping", "-vvv", *words],
                          cwd=folder, env={**clean, "HOME": str(folder), **env},
                          capture_output=True, text=True, timeout=300, check=False)
    found: dict[str, dict[str, str]] = {}
    for line in done.stdout.splitlines():
        if "SSH: EXEC ssh " not in line:
            continue
        address = line.split(">", 1)[0].lstrip("<")
        words_ = shlex.split(line.split("SSH: EXEC ", 1)[1])
        options: dict[str, str] = {}
        for flag, value in zip(words_, words_[1:], strict=False):
            if flag == "-o":
                key, _, setting = value.partition("=")
                options.setdefault(key.lower(), setting.strip('"'))
            elif flag in SHORT:  # ssh takes these first-wins too
                options.setdefault(SHORT[flag], value)
        found.setdefault(address, options)
    assert found, done.stdout[-2000:] + done.stderr[-2000:]
    return found


@pytest.mark.parametrize(("name", "cfg", "env", "words", "given"), CASES,
                         ids=[case[0] for case in CASES])
def test_each_host_connects_as_ansible_would(name: str, cfg: str | None, env: dict[str, str],
                                             words: list[str], given: dict[str, Any],
                                             tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "keys").mkdir()
    if cfg is not None:
        (tmp_path / "ansible.cfg").write_text(cfg)
    (tmp_path / "hosts.ini").write_text(HOSTS.format(key=tmp_path / "keys" / "h3"))
    theirs = ansible_commands(tmp_path, env, words)
    monkeypatch.chdir(tmp_path)
    options = AnsibleOptions(command_line=CommandLine(
        user=given.get("user"), timeout=given.get("timeout"),
        private_key=str(tmp_path / given["private_key"]) if "private_key" in given else None))
    opened = open_inventory([Path("hosts.ini")], options,
                            Surroundings(input, Redactor(), warn=lambda line: None,
                                         environ={"HOME": str(tmp_path), **env}),
                            extra_vars=parse_extra_vars([given["extra"]] if "extra" in given
                                                        else []))
    for host in opened.inventory.hosts:
        ssh = theirs[host.address]
        ours = {"user": host.user, "port": host.port, "identityfile": host.key_file,
                "connecttimeout": host.timeout or 10, "proxyjump": host.proxy_jump,
                "new keys": host.accept_new_host_key}
        expected = {"user": ssh.get("user"),
                    "port": int(ssh["port"]) if "port" in ssh else None,
                    "identityfile": ssh.get("identityfile"),
                    "connecttimeout": int(ssh["connecttimeout"]),
                    "proxyjump": ssh.get("proxyjump"),
                    "new keys": ssh.get("stricthostkeychecking") == "no"}
        assert ours == expected, host.name
