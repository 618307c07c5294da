"""nodeprov's reading of ansible.cfg and ANSIBLE_* against ``ansible-config dump`` (ansible-core
2.19, the test extra): every setting nodeprov honours, its value and its origin, on the real
ansible.cfg files of tests/data/ansible-cfg (sources in its README) and on cases written for
Ansible's precedence, search order and INI quirks. A configuration ansible-config refuses,
nodeprov refuses too, naming the file and entry."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from nodeprov.config import Settings, read_settings
from nodeprov.config.definitions import DEFINITIONS
from nodeprov.errors import InputError
from tests.config.oracle import Dumped, ansible_config_dump

CORPUS = Path(__file__).parent.parent / "data" / "ansible-cfg"


@dataclass(frozen=True)
class Case:
    """Files under a fresh root ("proj/ansible.cfg", "home/.ansible.cfg"), run from proj
    with HOME=root/home; ``{root}`` in the environment's values is that root."""

    files: dict[str, str | bytes]
    env: dict[str, str] = field(default_factory=dict)
    world_writable: bool = False


def _cfg(text: str, **env: str) -> Case:
    return Case({"proj/ansible.cfg": text}, dict(env))


CASES: dict[str, Case] = {
    **{path.stem: Case({"proj/ansible.cfg": path.read_bytes()})
       for path in sorted(CORPUS.glob("*.cfg"))},
    "env-beats-file": _cfg("[defaults]\nforks = 10\nremote_user = alice\n", ANSIBLE_FORKS="7"),
    "ssh-section-beats-defaults": _cfg("[defaults]\nhost_key_checking = False\n"
                                       "[ssh_connection]\nhost_key_checking = True\n"),
    "second-env-name-wins": _cfg("", ANSIBLE_HOST_KEY_CHECKING="False",
                                 ANSIBLE_SSH_HOST_KEY_CHECKING="yes"),
    "quotes": _cfg("[defaults]\nremote_user = \"bob\"\nprivate_key_file = '~/k'\n"
                   "vault_identity_list = 'a@x', \"b@y\" , c@z\nhost_key_checking = 'True'\n"
                   "[privilege_escalation]\nbecome_method = 'sudo'\nbecome = \"yes\"\n"),
    "paths": _cfg("[defaults]\nprivate_key_file = keys/../keys/id\n"
                  "vault_password_file = $HOME/.vault-pass\n"
                  "inventory = hosts.ini, ../other/inv.yml ,~/inv\n"),
    "paths-from-env": _cfg("", ANSIBLE_PRIVATE_KEY_FILE="keys/id",
                           ANSIBLE_INVENTORY="a.ini,b.yml"),
    "default-section-with-defaults": _cfg("[DEFAULT]\nforks = 3\n[defaults]\ntimeout = 5\n"),
    "default-section-alone": _cfg("[DEFAULT]\nforks = 3\n"),
    "bool-words": _cfg("[defaults]\nask_vault_pass = 0\n[privilege_escalation]\nbecome = on\n"
                       "become_ask_pass = Y\n[ssh_connection]\nhost_key_checking = off\n"),
    "ints": _cfg("[defaults]\nforks = 1e1\ntimeout = 30.0\nremote_port = 2222\n"),
    "bad-int": _cfg("[defaults]\nforks = ten\n"),
    "fraction": _cfg("[defaults]\ntimeout = 2.5\n"),
    "bad-int-env": _cfg("", ANSIBLE_FORKS="many"),
    "multi-line": _cfg("[ssh_connection]\nssh_args = -o ProxyJump=bastion\n"
                       "  -o Port=2222\n"),
    "percent-raw": _cfg("[ssh_connection]\nssh_args = -o ProxyCommand=\"ssh -W %h:%p b\"\n"
                        "ssh_common_args = -o ControlPath=%%d/%(x)s\n"),
    "colon-and-case": _cfg("[defaults]\nFORKS: 9\nRemote_User:carol\n"),
    "empty-env-int": _cfg("[defaults]\nforks = 10\n", ANSIBLE_FORKS=""),
    "empty-env-text": _cfg("[defaults]\nremote_user = alice\n", ANSIBLE_REMOTE_USER=""),
    "vault-id-match-false": _cfg("[defaults]\nvault_id_match = False\nvault_identity = ops\n"),
    "become-plugin": _cfg("[privilege_escalation]\nbecome_user = admin\n"
                          "[sudo_become_plugin]\nuser = deploy\npassword = pw\n",
                          ANSIBLE_BECOME_USER="x", ANSIBLE_SUDO_USER="y"),
    "become-pass-env": _cfg("", ANSIBLE_BECOME_PASS="from-env", ANSIBLE_SUDO_PASS=""),
    "duplicate-key": _cfg("[defaults]\nforks = 1\nforks = 2\n"),
    "no-equals": _cfg("[defaults]\nforks\n"),
    "no-section": _cfg("forks = 3\n"),
    "hash-is-no-inline-comment": _cfg("[defaults]\nremote_user = bob # admin ; really\n"),
    "not-utf8": Case({"proj/ansible.cfg": b"[defaults]\nforks = 3\nnocows = \xe9\n"}),
    "config-env-folder": Case({"conf/ansible.cfg": "[defaults]\nforks = 4\n",
                                   "proj/ansible.cfg": "[defaults]\nforks = 5\n"},
                              {"ANSIBLE_CONFIG": "{root}/conf"}),
    "config-env-relative": Case({"proj/sub/my.cfg": "[defaults]\nforks = 4\n"},
                                {"ANSIBLE_CONFIG": "sub/my.cfg"}),
    "config-env-missing": Case({"proj/ansible.cfg": "[defaults]\nforks = 5\n"},
                               {"ANSIBLE_CONFIG": "{root}/nowhere.cfg"}),
    "config-env-not-cfg": Case({"conf/settings.yml": "[defaults]\nforks = 4\n"},
                               {"ANSIBLE_CONFIG": "{root}/conf/settings.yml"}),
    "cwd-before-home": Case({"proj/ansible.cfg": "[defaults]\nforks = 5\n",
                                 "home/.ansible.cfg": "[defaults]\nforks = 6\n"}),
    "home-only": Case({"home/.ansible.cfg": "[defaults]\nremote_user = h\n"}),
    "world-writable-cwd": Case({"proj/ansible.cfg": "[defaults]\nforks = 5\n",
                                    "home/.ansible.cfg": "[defaults]\nforks = 6\n"},
                               world_writable=True),
    # both sections, the later entry winning; the environment beats them
    "inventory-ignore": _cfg("[defaults]\ninventory_ignore_extensions = .ini, '~'\n"
                             "inventory_ignore_patterns = ^a\n[inventory]\n"
                             "ignore_patterns = ^old, [.]skip$\n",
                             ANSIBLE_INVENTORY_IGNORE=".bak,.tmp"),
    "env-only": Case({}, {"ANSIBLE_REMOTE_USER": "e", "ANSIBLE_TIMEOUT": "3",
                              "ANSIBLE_VAULT_PASSWORD_FILE": "~/vp"}),
}


def _set_up(case: Case, root: Path) -> tuple[Path, dict[str, str]]:
    for name, text in case.files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    (root / "home").mkdir(exist_ok=True)
    cwd = root / "proj"
    cwd.mkdir(exist_ok=True)
    if case.world_writable:
        cwd.chmod(0o777)
    env = {"HOME": str(root / "home"),
           **{k: v.replace("{root}", str(root)) for k, v in case.env.items()}}
    return cwd, env


@pytest.fixture(scope="module")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, str],
                                                                          Dumped | str]]:
    """Every case set up in a folder of its own and dumped by ansible-config, several at
    once (each run takes a second or more)."""
    def dump(name: str) -> tuple[Path, dict[str, str], Dumped | str]:
        cwd, env = _set_up(CASES[name], tmp_path_factory.mktemp(name))
        return cwd, env, ansible_config_dump(cwd, env)

    with ThreadPoolExecutor(max_workers=4) as pool:
        return dict(zip(CASES, pool.map(dump, CASES), strict=True))


def _ours(settings: Settings) -> Dumped:
    found: Dumped = {"CONFIG_FILE": (str(settings.config_file) if settings.config_file else None,
                                     "")}
    for setting in settings.values.values():
        definition = setting.definition
        key = f"{definition.plugin}:{definition.ansible}" if definition.plugin else (
            definition.ansible)
        found[key] = (setting.value, setting.origin)
    return found


def _theirs(dumped: Dumped) -> Dumped:
    names = {"CONFIG_FILE", *(f"{d.plugin}:{d.ansible}" if d.plugin else d.ansible
                             for d in DEFINITIONS.values())}
    return {name: found for name, found in dumped.items() if name in names}


def test_the_corpus_holds_real_files_with_their_sources() -> None:
    files = sorted(CORPUS.glob("*.cfg"))
    readme = (CORPUS / "README.md").read_text()
    assert len(files) >= 10
    assert all(f"`{path.name}`" in readme for path in files)


@pytest.mark.parametrize("name", CASES)
def test_settings_match_ansible_config_dump(name: str, oracle: dict[str, Any]) -> None:
    cwd, env, theirs = oracle[name]
    if isinstance(theirs, str):
        with pytest.raises(InputError):
            read_settings(env, cwd)
        return
    assert _ours(read_settings(env, cwd)) == _theirs(theirs)


def test_the_corpus_sets_what_nodeprov_reads(oracle: dict[str, Any]) -> None:
    """The comparison is not vacuous: the real files set most of what nodeprov reads."""
    dumps = [oracle[case.stem][2] for case in CORPUS.glob("*.cfg")]
    # a file ansible-config refuses (an ssh_config given as ansible.cfg) sets nothing
    names = {name for dumped in dumps if not isinstance(dumped, str) for name in _theirs(dumped)}
    assert {"DEFAULT_HOST_LIST", "DEFAULT_REMOTE_USER", "DEFAULT_PRIVATE_KEY_FILE",
            "DEFAULT_FORKS", "DEFAULT_TIMEOUT", "DEFAULT_VAULT_PASSWORD_FILE",
            "ssh:host_key_checking", "ssh:ssh_args"} <= names


def test_a_bad_value_names_the_file_and_entry(tmp_path: Path) -> None:
    cwd, env = _set_up(CASES["bad-int"], tmp_path)
    with pytest.raises(InputError, match=r"proj/ansible.cfg: \[defaults\] forks: 'ten' is not "
                       "a whole number; expected a whole number"):
        read_settings(env, cwd)


def test_a_bad_variable_names_it(tmp_path: Path) -> None:
    cwd, env = _set_up(CASES["bad-int-env"], tmp_path)
    with pytest.raises(InputError, match="environment: ANSIBLE_FORKS: 'many'"):
        read_settings(env, cwd)


def test_what_nodeprov_does_not_read_is_listed(tmp_path: Path) -> None:
    cwd, env = _set_up(CASES["k3s-io-k3s-ansible"], tmp_path)
    settings = read_settings({**env, "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORKS": "3"}, cwd)
    # become under [defaults] is no setting Ansible reads: listed, not honoured
    assert "[defaults] become" in settings.not_used and "become" not in settings.values
    assert "[defaults] roles_path" in settings.not_used
    assert "ANSIBLE_NOCOLOR" in settings.not_used
    assert not any("inventory" in entry or "FORKS" in entry for entry in settings.not_used)


def test_a_world_writable_folder_is_passed_over_with_a_warning(tmp_path: Path) -> None:
    cwd, env = _set_up(CASES["world-writable-cwd"], tmp_path)
    settings = read_settings(env, cwd)
    assert settings.config_file == tmp_path / "home" / ".ansible.cfg"
    assert "world-writable" in settings.warnings[0]


def test_the_system_file_comes_last(tmp_path: Path) -> None:
    from nodeprov.config.search import find_config_file

    system = tmp_path / "etc.cfg"
    system.write_text("[defaults]\n")
    home = tmp_path / "home"
    home.mkdir()
    assert find_config_file({"HOME": str(home)}, tmp_path, system) == (system, "")
    (home / ".ansible.cfg").write_text("")
    assert find_config_file({"HOME": str(home)}, tmp_path, system)[0] == home / ".ansible.cfg"


def test_dump_reads_as_ansible_config_prints_it(tmp_path: Path) -> None:
    cwd, env = _set_up(CASES["become-plugin"], tmp_path)
    lines = read_settings(env, cwd).dump()
    assert lines == [f"CONFIG_FILE() = {cwd}/ansible.cfg", "", "sudo:", "____",
                     f"become_pass({cwd}/ansible.cfg) = (hidden)",
                     "become_user(env: ANSIBLE_SUDO_USER) = y"]
