"""Vault passwords from where Ansible takes them, in Ansible's order: each ``--vault-id``
(``vault_identity_list`` first), then each password file (``--vault-password-file``, then
``vault_password_file``) under the default label, then ``--ask-vault-pass``'s prompt.

    label@prompt        asks (``Vault password (label): ``)
    label@FILE          the file's text, stripped; an executable file is run and prints it
                        (``*-client`` scripts get ``--vault-id label``, exit 2: no such id)

    secrets = load_secrets(["prod@~/.vault-prod"], [".vault"], ask=False, prompt=getpass)

A source that fails is skipped with a warning while another gives a password, as in Ansible.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nodeprov.errors import InputError
from nodeprov.inventory.vaultformat import VaultFormatError, is_vault, parse_envelope
from nodeprov.util.yamlfile import read_bytes

DEFAULT_IDENTITY = "default"
PROMPTS = ("prompt", "prompt_ask_vault_pass")


class VaultSecretError(InputError):
    """A vault password that could not be had: the message names its source."""


@dataclass(frozen=True)
class VaultSecret:
    label: str  # the vault id it is given under
    source: str  # where it came from, for messages: "file .vault", "prompt", ...
    password: bytes = field(repr=False)


def load_secrets(vault_ids: Sequence[str], password_files: Sequence[str], *, ask: bool,
                 prompt: Callable[[str], str], warn: Callable[[str], None] = print,
                 identity: str = DEFAULT_IDENTITY, cwd: Path | None = None) -> list[VaultSecret]:
    """The secrets, in the order Ansible tries them. ``vault_ids`` are ``label@source`` (or
    just a source); ``identity`` is the label of password files (``vault_identity``)."""
    slugs = [*vault_ids, *(f"{identity}@{path}" for path in password_files)]
    if ask:
        slugs.append(f"{identity}@prompt_ask_vault_pass")
    secrets: list[VaultSecret] = []
    for index, slug in enumerate(slugs):
        label, at, source = slug.partition("@")
        if not at:
            label, source = "", slug
        if source in PROMPTS:
            secrets.append(_prompted(label or identity, source, prompt))
            continue
        try:
            secrets.append(_from_file(label, source, identity, secrets, cwd or Path.cwd()))
        except VaultSecretError as error:
            if not secrets and index == len(slugs) - 1:
                raise  # the error that stops the run, not also a warning before it
            warn(f"vault id {label or identity!r}: {error}")
    return secrets


def _prompted(label: str, source: str, prompt: Callable[[str], str]) -> VaultSecret:
    text = prompt("Vault password: " if source == "prompt_ask_vault_pass" else
                  f"Vault password ({label}): ")
    password = text.encode().strip()
    if not password:
        raise VaultSecretError("an empty vault password was typed", field=f"vault id {label}")
    return VaultSecret(label, "prompt", password)


def _from_file(label: str, given: str, identity: str, known: Sequence[VaultSecret],
               cwd: Path) -> VaultSecret:
    path = Path(os.path.normpath(cwd / os.path.expanduser(os.path.expandvars(given))))
    if not path.exists():
        raise VaultSecretError("the vault password file was not found", source=str(path))
    if path.is_dir():
        raise VaultSecretError("the vault password file is a folder", source=str(path))
    if path.stat().st_mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH):
        client = os.path.splitext(given)[0].endswith("-client")
        return _from_script(path, label if client else "", label or identity, client)
    try:  # at most MAX_BYTES: Ansible reads /dev/zero until memory runs out
        text = read_bytes(path, "vault password").strip()
    except InputError as error:
        raise VaultSecretError(error.message, source=error.source) from None
    if is_vault(text.decode(errors="replace")):  # a password file in a vault of its own
        text = _decrypted(text.decode(errors="replace"), known, str(path))
    return VaultSecret(label or identity, f"file {path}", _nonempty(text.strip(b"\r\n"), path))


def _from_script(path: Path, vault_id: str, label: str, client: bool) -> VaultSecret:
    """Run a password script as Ansible does: no arguments (a ``-client`` script gets
    ``--vault-id LABEL``), stdout is the password; a plain script's stderr stays on the
    terminal, so it can prompt."""
    argv = [str(path), *(["--vault-id", vault_id] if vault_id else [])]
    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE if client else None, check=False)
    except OSError as error:
        raise VaultSecretError(f"cannot run the vault password script ({error.strerror}); if "
                               "it is not a script, remove its executable bit",
                               source=str(path)) from None
    errors = (done.stderr or b"").decode(errors="replace").strip()[-300:]
    if client and done.returncode == 2:
        raise VaultSecretError(f"the vault password client script has no secret for vault id "
                               f"{vault_id!r}: {errors}", source=str(path))
    if done.returncode != 0:
        raise VaultSecretError(f"the vault password script exited {done.returncode}"
                               + (f": {errors}" if errors else ""), source=str(path))
    kind = "client script" if client else "script"
    return VaultSecret(label, f"{kind} {path}", _nonempty(done.stdout.strip(b"\r\n"), path))


def _nonempty(password: bytes, path: Path) -> bytes:
    if not password:
        raise VaultSecretError("the vault password it gives is empty", source=str(path))
    return password


def _decrypted(text: str, known: Sequence[VaultSecret], source: str) -> bytes:
    try:
        envelope = parse_envelope(text)
    except VaultFormatError as error:
        raise VaultSecretError(f"a damaged vault: {error}", source=source) from None
    for secret in known:
        plaintext = envelope.decrypt(secret.password)
        if plaintext is not None:
            return plaintext
    raise VaultSecretError("it is vault-encrypted and no vault id given before it opens it",
                           source=source)
