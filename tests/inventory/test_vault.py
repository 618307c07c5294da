"""Vault decryption (nodeprov.inventory.vaultformat/vaultsecrets/vaultlib) against ansible-core's
own: vaults are made by ``ansible-vault`` in the test, in both formats (1.1, and 1.2 with a
label), as whole files and as ``encrypt_string`` values, and nodeprov must read back what
``ansible-vault decrypt`` writes; password sources (files, scripts, ``-client`` scripts, prompts,
several ids, ``vault_id_match``) open or refuse the same vaults as for ansible-vault."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
import yaml

from nodeprov.inventory.vaultformat import VaultFormatError, parse_envelope
from nodeprov.inventory.vaultlib import Vault, VaultError
from nodeprov.inventory.vaultsecrets import VaultSecret, VaultSecretError, load_secrets
from nodeprov.util.tagged import Vaulted
from tests.inventory.oracle import ANSIBLE_BIN
from tests.pipes import feeding

PLAINTEXTS = {
    "yaml": "ansible_become_password: s3cr3t\nnode_subnet: 10.0.0.0/24\n",
    "one-block": "0123456789abcdef",  # a whole AES block: a whole block of padding
    "unicode": "mot de passe: é€🔑\n",
    "no-newline": "x",
    "long": "line of text\n" * 5000,
    "spaces": "  leading and trailing  \n\n",
}


def vault_tool(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    program = ANSIBLE_BIN / "ansible-vault"
    if not program.exists():
        pytest.skip("ansible-core is not installed (pip install -e '.[test]')")
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    return subprocess.run([str(program), *args], cwd=cwd, capture_output=True, text=True,
                          env={**clean, "HOME": str(cwd), **env}, timeout=300, check=False)


def made(args: list[str], cwd: Path) -> str:
    done = vault_tool(args, cwd)
    assert done.returncode == 0, done.stderr
    return done.stdout


def secret(label: str, password: str) -> VaultSecret:
    return VaultSecret(label, "test", password.encode())


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "pw-a").write_text("alpha\n")
    (tmp_path / "pw-b").write_text("bravo")
    return tmp_path


@pytest.mark.parametrize("name", PLAINTEXTS)
def test_whole_files_decrypt_to_what_ansible_vault_reads(name: str, folder: Path) -> None:
    plain = folder / "plain"
    plain.write_text(PLAINTEXTS[name])
    made(["encrypt", "--vault-id", "ops@pw-b", "--output", "v12", "plain"], folder)
    made(["encrypt", "--vault-password-file", "pw-a", "--output", "v11", "plain"], folder)
    vault = Vault([secret("default", "alpha"), secret("ops", "bravo")])
    for name_, version in (("v11", "1.1"), ("v12", "1.2")):
        text = (folder / name_).read_text()
        assert parse_envelope(text).version == version
        theirs = made(["decrypt", "--vault-id", "ops@pw-b", "--vault-password-file", "pw-a",
                       "--output", "-", name_], folder)
        assert vault.decrypt(text, source=name_) == theirs == PLAINTEXTS[name]
    assert parse_envelope((folder / "v12").read_text()).vault_id == "ops"


def test_inline_values_decrypt_to_what_ansible_vault_reads(folder: Path) -> None:
    out = made(["encrypt_string", "--vault-id", "ops@pw-b", "--name", "ansible_become_password",
                "v@lue with 'quotes' & $(sh)"], folder)
    yaml_text = out.replace("!vault |", "|")
    ciphertext = yaml.safe_load(yaml_text)["ansible_become_password"]
    (folder / "inline").write_text(ciphertext)
    theirs = made(["decrypt", "--vault-id", "ops@pw-b", "--output", "-", "inline"], folder)
    vault = Vault([secret("ops", "bravo")])
    assert vault.value(Vaulted(ciphertext, 2), source="x") == theirs == (
        "v@lue with 'quotes' & $(sh)")
    assert vault.values == {theirs}


def test_a_wrong_password_names_the_file_the_id_and_each_secret_tried(folder: Path) -> None:
    plain = folder / "plain"
    plain.write_text("a: 1\n")
    made(["encrypt", "--vault-id", "ops@pw-b", "--output", "v12", "plain"], folder)
    refused = vault_tool(["view", "--vault-password-file", "pw-a", "v12"], folder)
    assert refused.returncode != 0  # the oracle refuses it too
    vault = Vault([secret("default", "alpha"), VaultSecret("dev", "file ~/.dev", b"nope")])
    with pytest.raises(VaultError) as raised:
        vault.decrypt((folder / "v12").read_text(), source="group_vars/all.yml")
    assert str(raised.value) == (
        "group_vars/all.yml: vault id 'ops': wrong password: no vault secret tried opens it "
        "('default' from test; 'dev' from file ~/.dev)")
    with pytest.raises(VaultError, match="no vault password given; give its password with "
                       "--vault-password-file"):
        Vault().decrypt((folder / "v12").read_text(), source="f", line=3, field="x")


def test_vault_id_match_tries_only_the_matching_label(folder: Path) -> None:
    plain = folder / "plain"
    plain.write_text("a: 1\n")
    made(["encrypt", "--vault-id", "ops@pw-b", "--output", "v12", "plain"], folder)
    # the right password under another label: Ansible opens it unless vault_id_match is set
    assert vault_tool(["view", "--vault-id", "dev@pw-b", "v12"], folder).returncode == 0
    assert vault_tool(["view", "--vault-id", "dev@pw-b", "v12"], folder,
                      ANSIBLE_VAULT_ID_MATCH="1").returncode != 0
    text = (folder / "v12").read_text()
    assert Vault([secret("dev", "bravo")]).decrypt(text, source="v") == "a: 1\n"
    with pytest.raises(VaultError, match="vault_id_match allows only a secret of that label"):
        Vault([secret("dev", "bravo")], id_match=True).decrypt(text, source="v")


def test_password_sources_open_what_ansible_opens(folder: Path) -> None:
    """A file with spaces and CRLF, a script, a -client script given --vault-id, a password
    file in a vault of its own: each opens the same vault for nodeprov as for ansible-vault."""
    (folder / "pw-crlf").write_text("  bravo \r\n")
    script = folder / "pw-script.sh"
    script.write_text("#!/bin/sh\nprintf 'bravo\\r\\n'\n")
    client = folder / "pw-client.sh"
    client.write_text('#!/bin/sh\necho "$@" > "${0%/*}/client-args"\n[ "$2" = ops ] || exit 2\n'
                      "echo bravo\n")
    for path in (script, client):
        path.chmod(0o755)
    made(["encrypt", "--vault-password-file", "pw-a", "--output", "pw-vaulted", "pw-b"],
         folder)
    (folder / "plain").write_text("a: 1\n")
    made(["encrypt", "--vault-id", "ops@pw-b", "--output", "v12", "plain"], folder)
    text = (folder / "v12").read_text()
    for sources in (["ops@pw-crlf"], ["ops@pw-script.sh"], ["ops@pw-client.sh"],
                    ["default@pw-a", "ops@pw-vaulted"]):
        args = [arg for source in sources for arg in ("--vault-id", source)]
        assert vault_tool(["view", *args, "v12"], folder).returncode == 0, sources
        secrets = load_secrets(sources, [], ask=False, prompt=input, cwd=folder)
        assert Vault(secrets).decrypt(text, source="v12") == "a: 1\n", sources
    assert (folder / "client-args").read_text() == "--vault-id ops\n"


def test_a_client_script_without_the_id_is_skipped_with_a_warning(folder: Path) -> None:
    client = folder / "pw-client"
    client.write_text("#!/bin/sh\necho 'no such id' >&2\nexit 2\n")
    client.chmod(0o755)
    warnings: list[str] = []
    secrets = load_secrets(["prod@pw-client", "pw-a"], ["missing-file"], ask=False,
                           prompt=input, warn=warnings.append, cwd=folder)
    assert [s.label for s in secrets] == ["default"]
    assert "has no secret for vault id 'prod': no such id" in warnings[0]
    assert "missing-file: the vault password file was not found" in warnings[1]
    with pytest.raises(VaultSecretError, match="not found"):
        load_secrets([], ["missing-file"], ask=False, prompt=input, warn=warnings.append,
                     cwd=folder)


def test_the_source_that_stops_the_run_is_the_error_not_also_a_warning(folder: Path) -> None:
    """``--vault-password-file nope`` printed its problem twice, as a warning and the error."""
    warnings: list[str] = []
    with pytest.raises(VaultSecretError, match="not found"):
        load_secrets(["prod@pw-missing"], ["missing-file"], ask=False, prompt=input,
                     warn=warnings.append, cwd=folder)
    assert len(warnings) == 1 and "pw-missing: the vault password file was not found" in (
        warnings[0])


def test_a_password_file_without_end_is_refused_by_its_size(folder: Path) -> None:
    """``--vault-password-file /dev/zero`` read forever (as ansible-vault does, whose
    FileVaultSecret calls ``f.read()``); a pipe stands for the file without end."""
    feeding(folder / "pw-endless", b"x", 5 << 20)
    with pytest.raises(VaultSecretError, match="pw-endless: file is over 4194304 bytes; "
                       "expected a vault password file under 4 MiB"):
        load_secrets([], ["pw-endless"], ask=False, prompt=input, cwd=folder)


def test_prompts_ask_with_ansibles_words_and_refuse_an_empty_password() -> None:
    asked: list[str] = []

    def answer(text: str) -> str:
        asked.append(text)
        return " pw \n"

    secrets = load_secrets(["ops@prompt"], [], ask=True, prompt=answer)
    assert asked == ["Vault password (ops): ", "Vault password: "]
    assert [(s.label, s.password) for s in secrets] == [("ops", b"pw"), ("default", b"pw")]
    with pytest.raises(VaultSecretError, match="empty vault password"):
        load_secrets([], [], ask=True, prompt=lambda text: "")


def test_a_damaged_vault_is_a_format_error(folder: Path) -> None:
    (folder / "plain").write_text("a: 1\n")
    text = made(["encrypt", "--vault-password-file", "pw-a", "--output", "-", "plain"], folder)
    for damaged in (text[:60], text.replace("3", "g", 1), "$ANSIBLE_VAULT;1.1\n00\n",
                    text.replace("AES256", "AES128")):
        with pytest.raises(VaultFormatError):
            parse_envelope(damaged)
        with pytest.raises(VaultError, match="not a valid vault"):
            Vault([secret("default", "alpha")]).decrypt(damaged, source="f")
