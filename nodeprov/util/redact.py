"""Secrets kept out of everything nodeprov writes: the sudo password and what a vault
decrypted are replaced by ``********`` in its output, errors, warnings and JSON reports, and the
password or token of any URL (a package index's) by ``***`` (``mask_urls``).

    redactor = Redactor()
    with redactor.streams():            # sys.stdout and sys.stderr go through it
        redactor.add({"Correct-Horse-7f3a9"})
        redactor.follow(vault.snapshot)      # what a vault decrypts, as it decrypts it
        print("sudo: Correct-Horse-7f3a9")   # sudo: ********

Values under ``MIN_LENGTH`` characters are not masked: they would mask ordinary words.
A stream sees each write as nodeprov's printers make it (a line, a whole table); a node's
own output streamed live may split a value across two writes.
"""

from __future__ import annotations

import io
import re
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TextIO

MASK = "********"
MIN_LENGTH = 4
# any scheme's user:password@ (an inventory may name ftp:// or file:// where http was meant,
# and the plan quotes it), and http(s)://token@ (pip takes a lone user name as a token); an
# ssh://user@host of a jump host is no secret
_URL_CREDENTIALS = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^/@\s:]+)(?P<password>:[^/@\s]*)@"
    r"|(?P<web>[Hh][Tt][Tt][Pp][Ss]?://)(?P<token>[^/@\s:]+)@")


def mask_urls(text: str) -> str:
    """``text`` with the passwords and tokens of the URLs in it masked.

    >>> mask_urls("pip: https://ci:s3cret@m.example/simple and https://tok@m.example/x")
    'pip: https://ci:***@m.example/simple and https://***@m.example/x'
    >>> mask_urls("ftp://ci:s3cret@m.example/simple, ssh://alice@bastion")
    'ftp://ci:***@m.example/simple, ssh://alice@bastion'
    """
    return _URL_CREDENTIALS.sub(lambda found: f"{found['scheme']}{found['user']}:***@"
                                if found["scheme"] else f"{found['web']}***@", text)


class Redactor:
    """The secrets of one command's run, masked wherever its text goes; from any thread."""

    def __init__(self) -> None:
        self._known: set[str] = set()
        self._followed: list[Callable[[], Iterable[str]]] = []
        self._lock = threading.Lock()

    def add(self, values: Iterable[str]) -> None:
        with self._lock:
            self._known |= set(values)

    def follow(self, values: Callable[[], Iterable[str]]) -> None:
        """Mask what ``values()`` gives at each write: secrets still being found."""
        with self._lock:
            self._followed.append(values)

    def _secrets(self) -> list[str]:
        with self._lock:
            found = set(self._known).union(*(values() for values in self._followed))
        # the longest first: a secret holding another is masked whole
        return sorted((v for v in found if len(v) >= MIN_LENGTH), key=len, reverse=True)

    def redact(self, text: str) -> str:
        """
        >>> redactor = Redactor()
        >>> redactor.add({"s3cret-pw", "pw"})
        >>> redactor.redact("sudo -p s3cret-pw (pw) https://ci:tok@m.example/simple")
        'sudo -p ******** (pw) https://ci:***@m.example/simple'
        """
        for secret in self._secrets():
            if secret in text:
                text = text.replace(secret, MASK)
        return mask_urls(text)

    def walk(self, value: Any) -> Any:
        """``value`` (a JSON report) with every text in it redacted, keys too."""
        if isinstance(value, str):
            return self.redact(value)
        if isinstance(value, Mapping):
            return {self.walk(key): self.walk(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.walk(item) for item in value]
        return value

    @contextmanager
    def streams(self) -> Iterator[None]:
        """sys.stdout and sys.stderr through this redactor, for the duration."""
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = _Redacting(sys.stdout, self), _Redacting(sys.stderr, self)
        try:
            yield
        finally:
            sys.stdout, sys.stderr = saved


class _Redacting(io.TextIOBase):
    """A text stream writing through a Redactor; everything else is the stream's."""

    def __init__(self, stream: TextIO, redactor: Redactor) -> None:
        super().__init__()
        self._stream = stream
        self._redactor = redactor

    def write(self, text: str) -> int:
        self._stream.write(self._redactor.redact(text))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def writable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self._stream.encoding
