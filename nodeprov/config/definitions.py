"""The Ansible settings nodeprov honours, each defined as ansible-core defines it: where
Ansible reads it (INI entries, then environment variables; a later entry of each list wins),
its type, and under which name ``ansible-config dump`` shows it. Connection settings are the
``ssh`` connection plugin's and ``become_user``/``become_pass`` the ``sudo`` become plugin's
(``ansible-config dump -t connection``/``-t become``): those are the ones Ansible's ssh and sudo
read. Every other setting of an ansible.cfg is listed as not used by ``nodeprov config``,
never dropped in silence; those a user could expect to matter (``might_matter``) are also
named at the start of each command.

    >>> DEFINITIONS["forks"].env
    ('ANSIBLE_FORKS',)
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULTS = "defaults"
BECOME = "privilege_escalation"
SSH = "ssh_connection"
INVENTORY = "inventory"


@dataclass(frozen=True)
class Definition:
    name: str  # nodeprov's name for it: the ansible.cfg key
    ansible: str  # ansible-config dump's name (DEFAULT_FORKS; ssh_args in the ssh plugin)
    ini: tuple[tuple[str, str], ...]
    env: tuple[str, ...]
    kind: str | None = None  # bool, int, path, pathlist, list; None: the text as written
    plugin: str = ""  # "" (Ansible's base settings), "ssh" (connection) or "sudo" (become)
    secret: bool = False  # never shown
    use: str = ""  # what nodeprov does with it


def _base(name: str, ansible: str, section: str, kind: str | None, use: str) -> Definition:
    return Definition(name, ansible, ((section, name),), (f"ANSIBLE_{name.upper()}",), kind,
                      use=use)


DEFINITIONS: dict[str, Definition] = {d.name: d for d in (
    _base("inventory", "DEFAULT_HOST_LIST", DEFAULTS, "pathlist",
          "the inventory when none is given"),
    _base("remote_user", "DEFAULT_REMOTE_USER", DEFAULTS, None,
          "SSH user (-u and ansible_user win)"),
    _base("private_key_file", "DEFAULT_PRIVATE_KEY_FILE", DEFAULTS, "path",
          "SSH key (--private-key and ansible_ssh_private_key_file win)"),
    _base("remote_port", "DEFAULT_REMOTE_PORT", DEFAULTS, "int",
          "SSH port (ansible_port wins)"),
    _base("forks", "DEFAULT_FORKS", DEFAULTS, "int", "hosts in parallel (-f wins)"),
    _base("timeout", "DEFAULT_TIMEOUT", DEFAULTS, "int",
          "seconds to open an SSH connection (-T wins)"),
    _base("become", "DEFAULT_BECOME", BECOME, "bool", "use sudo (-b, ansible_become win)"),
    _base("become_method", "DEFAULT_BECOME_METHOD", BECOME, None,
          "sudo only; another method is refused"),
    _base("become_ask_pass", "DEFAULT_BECOME_ASK_PASS", BECOME, "bool",
          "ask for the sudo password (as -K)"),
    _base("vault_password_file", "DEFAULT_VAULT_PASSWORD_FILE", DEFAULTS, "path",
          "vault password file or script, after --vault-password-file"),
    _base("vault_identity_list", "DEFAULT_VAULT_IDENTITY_LIST", DEFAULTS, "list",
          "vault ids (label@source), before --vault-id"),
    _base("vault_identity", "DEFAULT_VAULT_IDENTITY", DEFAULTS, None,
          "the vault id of password files and 1.1 vaults"),
    # no type in Ansible: any text (even False) turns the match on, as in Ansible
    _base("vault_id_match", "DEFAULT_VAULT_ID_MATCH", DEFAULTS, None,
          "try only the secret whose label matches a vault's id"),
    _base("ask_vault_pass", "DEFAULT_ASK_VAULT_PASS", DEFAULTS, "bool",
          "ask for the vault password (as --ask-vault-pass)"),
    Definition("inventory_ignore_extensions", "INVENTORY_IGNORE_EXTS",
               ((DEFAULTS, "inventory_ignore_extensions"), (INVENTORY, "ignore_extensions")),
               ("ANSIBLE_INVENTORY_IGNORE",), "list",
               use="files of an inventory folder not read (ends of their names)"),
    Definition("inventory_ignore_patterns", "INVENTORY_IGNORE_PATTERNS",
               ((DEFAULTS, "inventory_ignore_patterns"), (INVENTORY, "ignore_patterns")),
               ("ANSIBLE_INVENTORY_IGNORE_REGEX",), "list",
               use="files of an inventory folder not read (regular expressions)"),
    Definition("host_key_checking", "host_key_checking", ((DEFAULTS, "host_key_checking"),
               (SSH, "host_key_checking")), ("ANSIBLE_HOST_KEY_CHECKING",
               "ANSIBLE_SSH_HOST_KEY_CHECKING"), "bool", "ssh",
               use="False: unknown host keys are trusted and recorded (changed ones refused)"),
    Definition("ssh_args", "ssh_args", ((SSH, "ssh_args"),), ("ANSIBLE_SSH_ARGS",),
               plugin="ssh", use="ProxyJump, ProxyCommand, port, known-hosts options"),
    Definition("ssh_common_args", "ssh_common_args", ((SSH, "ssh_common_args"),),
               ("ANSIBLE_SSH_COMMON_ARGS",), plugin="ssh",
               use="as ssh_args (ansible_ssh_common_args wins)"),
    Definition("ssh_extra_args", "ssh_extra_args", ((SSH, "ssh_extra_args"),),
               ("ANSIBLE_SSH_EXTRA_ARGS",), plugin="ssh",
               use="as ssh_args (ansible_ssh_extra_args wins)"),
    Definition("become_user", "become_user", ((BECOME, "become_user"),
               ("sudo_become_plugin", "user")), ("ANSIBLE_BECOME_USER", "ANSIBLE_SUDO_USER"),
               plugin="sudo", use="root only; another user is refused"),
    Definition("become_pass", "become_pass", (("sudo_become_plugin", "password"),),
               ("ANSIBLE_BECOME_PASS", "ANSIBLE_SUDO_PASS"), plugin="sudo", secret=True,
               use="the sudo password (-K and ansible_become_password win)"),
)}
# read to find the others, never reported as not used
CONFIG_ENV = "ANSIBLE_CONFIG"

# Not used, yet a user could expect them to change what nodeprov does: named on one line at
# the start of a command. Every other entry nodeprov does not read (roles, callbacks, fact
# caching, pipelining, control_path, retry files, colours ...) cannot change what it does:
# only ``nodeprov config`` lists it.
MIGHT_MATTER_KEYS = frozenset({
    "ask_pass", "transport", "hash_behaviour", "precedence", "vars_plugins_enabled",
    "playbook_vars_root", "jinja2_native", "strategy", "any_errors_fatal", "executable",
    "connection_password_file", "become", "become_method", "become_user", "become_ask_pass",
    "become_exe", "become_flags", "sudo_user", "sudo_exe", "sudo_flags", "ask_sudo_pass",
    "su_user", "ssh_executable", "enable_plugins"})
MIGHT_MATTER_SECTIONS = frozenset({"paramiko_connection"})
MIGHT_MATTER_ENV = frozenset({
    "ANSIBLE_ASK_PASS", "ANSIBLE_TRANSPORT", "ANSIBLE_HASH_BEHAVIOUR", "ANSIBLE_PRECEDENCE",
    "ANSIBLE_VARS_ENABLED", "ANSIBLE_PLAYBOOK_VARS_ROOT", "ANSIBLE_JINJA2_NATIVE",
    "ANSIBLE_STRATEGY", "ANSIBLE_ANY_ERRORS_FATAL", "ANSIBLE_EXECUTABLE",
    "ANSIBLE_CONNECTION_PASSWORD_FILE", "ANSIBLE_BECOME_EXE", "ANSIBLE_BECOME_FLAGS",
    "ANSIBLE_SUDO_EXE", "ANSIBLE_SUDO_FLAGS", "ANSIBLE_SSH_EXECUTABLE",
    "ANSIBLE_INVENTORY_ENABLED"})
MIGHT_MATTER_ENV_PREFIX = "ANSIBLE_PARAMIKO_"


def might_matter(entry: str) -> bool:
    """Whether a not-used entry ("[section] key" or "ANSIBLE_X") could be expected to matter.

    >>> might_matter("[paramiko_connection] look_for_keys"), might_matter("[defaults] library")
    (True, False)
    """
    if entry.startswith("["):
        section, _, key = entry[1:].partition("] ")
        return section in MIGHT_MATTER_SECTIONS or key in MIGHT_MATTER_KEYS
    return entry in MIGHT_MATTER_ENV or entry.startswith(MIGHT_MATTER_ENV_PREFIX)
