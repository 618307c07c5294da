"""Where wheels come from: pip's source options as the inventory gives them, shown without
the passwords they may carry.

    >>> Sources().options("cpu")
    ('--index-url', 'https://download.pytorch.org/whl/cpu', '--extra-index-url', 'https://pypi.org/simple')
    >>> Sources(index_url="https://ci:s3cret@mirror.example/simple").describe("cpu")
    'https://ci:***@mirror.example/simple'

By default a node installs from the PyTorch index of its variant, with PyPI as an extra index for
everything else: torch's local label (``+cpu``, ``+cu130``) exists only on the PyTorch index, so
PyPI cannot shadow it. Given ``index_url``, ``extra_index_urls`` or ``find_links`` (a mirror, an
air-gapped cluster), those replace the defaults entirely. An index URL may carry credentials
(``https://user:token@mirror/simple``): they reach pip's command line and nothing else; every
text nodeprov shows or writes goes through ``util.redact.mask_urls``.
"""

from __future__ import annotations

from dataclasses import dataclass

from nodeprov.util.redact import mask_urls
from nodeprov.variants.choose import index_url

PYPI = "https://pypi.org/simple"
@dataclass(frozen=True)
class Sources:
    """pip's source options as the inventory gives them (empty: the variant's defaults)."""

    index_url: str | None = None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    no_index: bool = False  # a node's pip.conf may say so (pipconfig); the inventory cannot

    @property
    def custom(self) -> bool:
        return bool(self.index_url or self.extra_index_urls or self.find_links or self.no_index)

    def options(self, variant: str) -> tuple[str, ...]:
        if not self.custom:
            return ("--index-url", index_url(variant), "--extra-index-url", PYPI)
        options = ["--no-index"] if self.no_index else []
        options += ["--index-url", self.index_url] if self.index_url else []
        for url in self.extra_index_urls:
            options += ["--extra-index-url", url]
        for link in self.find_links:
            options += ["--find-links", link]
        return tuple(options)

    def describe(self, variant: str) -> str:
        """Where wheels come from, for a change summary: "/opt/wheels", "https://..."."""
        if not self.custom:
            return index_url(variant)
        return mask_urls(", ".join([*self.find_links, *([] if self.no_index else filter(
            None, [self.index_url, *self.extra_index_urls]))]) or "no index (--no-index)")
