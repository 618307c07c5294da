"""Decrypting vault text with the run's vault secrets, as Ansible tries them: every secret in
order (with ``vault_id_match``, only those labelled with the vault's id: a 1.2 vault's label,
else the default identity). A vault no secret opens is an error naming the file, the line and
variable of an inline value, the vault's id and every secret tried.

    vault = Vault(load_secrets(...))
    text = vault.open_file(read_text(path), str(path))    # the text as is when not a vault
    value = vault.value(vaulted, source="hosts.yml", field="ansible_become_password")
    vault.vaulted_files, vault.snapshot()   # what was decrypted: output must never show it
"""

from __future__ import annotations

import shlex
import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from nodeprov.errors import InputError, StricterThanAnsible
from nodeprov.inventory.vaultformat import Envelope, VaultFormatError, is_vault, parse_envelope
from nodeprov.inventory.vaultsecrets import DEFAULT_IDENTITY, VaultSecret
from nodeprov.util.tagged import Vaulted
from nodeprov.util.yamlfile import load_yaml_text

HOW = ("give its password with --vault-password-file FILE, --vault-id LABEL@SOURCE or "
       "--ask-vault-pass (or vault_password_file / vault_identity_list in ansible.cfg)")


class VaultError(StricterThanAnsible):
    """Vault text that cannot be decrypted: damaged, or no secret opens it (never skipped,
    not even in an inventory folder, where Ansible skips a file it cannot parse)."""


class Vault:
    """The secrets of a run and what they decrypted; safe to use from several threads."""

    def __init__(self, secrets: Sequence[VaultSecret] = (), *,
                 identity: str = DEFAULT_IDENTITY, id_match: bool = False) -> None:
        self.secrets = tuple(secrets)
        self.identity = identity
        self.id_match = id_match
        self.vaulted_files: set[str] = set()  # whole files decrypted, by source
        self.values: set[str] = set()  # inline values decrypted, and the values of files
        self._keys: dict[tuple[bytes, bytes], tuple[bytes, bytes, bytes]] = {}
        self._lock = threading.Lock()

    def open_file(self, text: str, source: str) -> str:
        """A file's text, decrypted when the whole file is a vault (remembered by source)."""
        if not is_vault(text):
            return text
        plaintext = self.decrypt(text, source=source)
        with self._lock:
            self.vaulted_files.add(source)
            self.values |= file_values(plaintext)
        return plaintext

    def value(self, vaulted: Vaulted, *, source: str, field: str = "") -> str:
        """An inline ``!vault`` value decrypted (remembered)."""
        plaintext = self.decrypt(vaulted.ciphertext, source=source, line=vaulted.line,
                                 field=field)
        with self._lock:
            self.values.add(plaintext)
        return plaintext

    def snapshot(self) -> set[str]:
        """Every value decrypted so far (from any thread)."""
        with self._lock:
            return set(self.values)

    def decrypt(self, text: str, *, source: str, line: int | None = None,
                field: str = "") -> str:
        """The plaintext of ``text`` (a whole file's, or an inline ``!vault`` value's)."""
        try:
            envelope = parse_envelope(text)
        except VaultFormatError as error:
            raise VaultError(f"not a valid vault: {error}; encrypt it again with "
                             "ansible-vault", source=source, line=line, field=field) from None
        vault_id = envelope.vault_id or self.identity
        tried = [secret for secret in self.secrets
                 if not self.id_match or secret.label == vault_id]
        for secret in tried:
            try:
                plaintext = envelope.decrypt(secret.password, self._derived(envelope, secret))
            except VaultFormatError as error:
                raise VaultError(f"not a valid vault: {error}", source=source, line=line,
                                 field=field) from None
            if plaintext is not None:
                return plaintext.decode(errors="surrogateescape")
        raise VaultError(self._why(vault_id, tried), source=source, line=line, field=field)

    def _derived(self, envelope: Envelope, secret: VaultSecret) -> tuple[bytes, bytes, bytes]:
        """The keys of a password and salt, derived once (10000 PBKDF2 rounds each)."""
        key = (secret.password, envelope.salt)
        with self._lock:
            known = self._keys.get(key)
        if known is None:
            known = envelope.keys(secret.password)
            with self._lock:
                self._keys[key] = known
        return known

    def _why(self, vault_id: str, tried: Sequence[VaultSecret]) -> str:
        if not self.secrets:
            return f"vault-encrypted (vault id {vault_id!r}) and no vault password given; {HOW}"
        if not tried:
            labels = ", ".join(repr(secret.label) for secret in self.secrets)
            return (f"vault-encrypted with vault id {vault_id!r}, and vault_id_match allows "
                    f"only a secret of that label (given: {labels}); give --vault-id "
                    f"{vault_id}@SOURCE")
        names = "; ".join(f"{secret.label!r} from {secret.source}" for secret in tried)
        return (f"vault id {vault_id!r}: wrong password: no vault secret tried opens it "
                f"({names})")


def file_values(plaintext: str) -> set[str]:
    """The values a decrypted file holds: the texts of a YAML (or JSON) document, else, as in
    an INI inventory, what follows ``=`` in each word.

    >>> sorted(file_values("pw: s3cret\\nports: [22, 'x y']\\n"))
    ['s3cret', 'x y']
    >>> sorted(file_values("[gpu]\\nn1 ansible_host=10.0.0.1 token='a b'\\n"))
    ['10.0.0.1', 'a b']
    """
    try:
        document = load_yaml_text(plaintext, "", vault=True)
    except InputError:
        document = None
    if isinstance(document, (Mapping, list)):
        return set(_texts(document))
    found: set[str] = set()
    for line in plaintext.splitlines():
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            words = line.split()
        found |= {word.partition("=")[2] for word in words if "=" in word} - {""}
    return found


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)
