"""Decrypting vault text with the run's vault secrets, as Ansible tries them: every secret in
order (with ``vault_id_match``, only those labelled with the vault's id: a 1.2 vault's label,
else the default identity). A vault no secret opens is an error naming the file, the line and
variable of an inline value, the vault's id and every secret tried.

    vault = Vault(load_secrets(...))
    text = vault.decrypt(ciphertext, source="group_vars/all/vault.yml")
    vault.plaintexts         # every value it decrypted: what output must never show
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from nodeprov.errors import InputError
from nodeprov.inventory.vaultformat import Envelope, VaultFormatError, parse_envelope
from nodeprov.inventory.vaultsecrets import DEFAULT_IDENTITY, VaultSecret

HOW = ("give its password with --vault-password-file FILE, --vault-id LABEL@SOURCE or "
       "--ask-vault-pass (or vault_password_file / vault_identity_list in ansible.cfg)")


class VaultError(InputError):
    """Vault text that cannot be decrypted: damaged, or no secret opens it."""


class Vault:
    """The secrets of a run and what they decrypted; safe to use from several threads."""

    def __init__(self, secrets: Sequence[VaultSecret] = (), *,
                 identity: str = DEFAULT_IDENTITY, id_match: bool = False) -> None:
        self.secrets = tuple(secrets)
        self.identity = identity
        self.id_match = id_match
        self.plaintexts: set[str] = set()
        self._keys: dict[tuple[bytes, bytes], tuple[bytes, bytes, bytes]] = {}
        self._lock = threading.Lock()

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
                decoded = plaintext.decode(errors="surrogateescape")
                with self._lock:
                    self.plaintexts.add(decoded)
                return decoded
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
