"""The Ansible Vault format, read with the ``cryptography`` package (never ansible-core):

    $ANSIBLE_VAULT;1.1;AES256            (1.2 adds ";LABEL", the vault id)
    hex( hex(salt) \\n hex(HMAC-SHA256) \\n hex(ciphertext) ), in lines of 80

The password and salt give 80 bytes by PBKDF2-HMAC-SHA256 (10000 rounds): the AES-256 key, the
HMAC key, and the AES-CTR counter block; the HMAC of the ciphertext is checked before anything
is decrypted, and the plaintext is PKCS#7-padded (the format as ansible-core's
``parsing/vault`` writes it).

    envelope = parse_envelope(text)          # VaultFormatError if it is not a vault
    envelope.vault_id                        # "prod", or None for 1.1
    plaintext = envelope.decrypt(b"password")   # None: not this password
"""

from __future__ import annotations

import binascii
from dataclasses import dataclass, field

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, hmac, padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

from nodeprov.errors import EXIT_BAD_INPUT, NodeprovError

HEADER = "$ANSIBLE_VAULT"
ROUNDS = 10000
KEY_BYTES = 32
COUNTER_BYTES = 16


class VaultFormatError(NodeprovError, ValueError):
    """Text that starts as a vault but is not one (damaged, cut short, another cipher);
    vaultlib turns it into a VaultError naming the file."""

    exit_code = EXIT_BAD_INPUT


def is_vault(text: str) -> bool:
    """True when ``text`` is vault-encrypted (it starts with the header, as Ansible checks)."""
    return text.startswith(HEADER)


@dataclass(frozen=True)
class Envelope:
    version: str
    vault_id: str | None  # the label of a 1.2 vault
    salt: bytes = field(repr=False)
    digest: bytes = field(repr=False)
    ciphertext: bytes = field(repr=False)

    def keys(self, password: bytes) -> tuple[bytes, bytes, bytes]:
        """(AES key, HMAC key, counter block) for ``password`` and this vault's salt."""
        derived = PBKDF2HMAC(algorithm=hashes.SHA256(), length=2 * KEY_BYTES + COUNTER_BYTES,
                             salt=self.salt, iterations=ROUNDS).derive(password)
        return derived[:KEY_BYTES], derived[KEY_BYTES:2 * KEY_BYTES], derived[2 * KEY_BYTES:]

    def decrypt(self, password: bytes,
                keys: tuple[bytes, bytes, bytes] | None = None) -> bytes | None:
        """The plaintext, or None when the HMAC says the password is not this vault's
        (``keys``: ``self.keys(password)`` when known already)."""
        aes_key, hmac_key, counter = keys or self.keys(password)
        check = hmac.HMAC(hmac_key, hashes.SHA256())
        check.update(self.ciphertext)
        try:
            check.verify(self.digest)
        except InvalidSignature:
            return None
        decryptor = Cipher(algorithms.AES(aes_key), modes.CTR(counter)).decryptor()
        padded = decryptor.update(self.ciphertext) + decryptor.finalize()
        unpadder = padding.PKCS7(algorithms.AES.block_size).unpadder()
        try:
            return unpadder.update(padded) + unpadder.finalize()
        except ValueError:  # a right HMAC over a wrong padding: a vault made by hand
            raise VaultFormatError("its padding is damaged") from None


def parse_envelope(text: str) -> Envelope:
    """The header and the three parts of a vault; VaultFormatError says what is wrong."""
    lines = text.splitlines()
    header = lines[0].strip().split(";") if lines else []
    if len(header) < 3 or header[0] != HEADER:
        raise VaultFormatError("the first line is not $ANSIBLE_VAULT;VERSION;CIPHER[;LABEL]")
    version, cipher = header[1].strip(), header[2].strip()
    if cipher != "AES256":
        raise VaultFormatError(f"cipher {cipher!r} is not AES256, the only one Ansible writes")
    try:
        # the lines are joined as they are: a space in one is damage, as for Ansible
        salt_hex, digest_hex, ciphertext_hex = binascii.unhexlify(
            "".join(lines[1:])).split(b"\n", 2)
        return Envelope(version, header[3].strip() if len(header) > 3 else None,
                        binascii.unhexlify(salt_hex), binascii.unhexlify(digest_hex),
                        binascii.unhexlify(ciphertext_hex))
    except (ValueError, binascii.Error):
        raise VaultFormatError("its hexadecimal body is damaged or cut short") from None
