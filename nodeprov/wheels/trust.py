"""An index whose certificate pip or uv did not trust, told from their output: the failure's
line then says so, and how to fix it, instead of "could not reach" or pip's last words ("No
matching distribution found", its answer once every index failed).

    >>> untrusted("  cause: invalid peer certificate: UnknownIssuer")
    'invalid peer certificate: UnknownIssuer'
    >>> untrusted("No matching distribution found for six") is None
    True

A site mirror's certificate comes from the site's own CA: pip (truststore, Debian's system
bundle) trusts it once the CA is in the system store or named by pip's ``cert``; uv is given
the same (``installer``). Verification is never turned off here.
"""

from __future__ import annotations

import re

from nodeprov.util.units import clipped

# pip (OpenSSL through Python's ssl) and uv (rustls) name a certificate they refuse thus
_REFUSED = re.compile(r"certificate verify failed: [^()'\"\n]*[^()'\"\n ]"
                      r"|invalid peer certificate: [^\n]*[^\n ]")
ON_NODE = "certificate not trusted: install the site's CA on the node, or set pip's cert"
HERE = ("the index's certificate is not trusted here: install the site's CA on this machine "
        "(update-ca-certificates), or name it in PIP_CERT (REQUESTS_CA_BUNDLE or "
        "CURL_CA_BUNDLE win where set)")


def untrusted(output: str) -> str | None:
    """The words of pip's or uv's refusal of a server certificate in ``output``, None when
    there is none."""
    found = _REFUSED.findall(output)
    return clipped(found[-1], 120) if found else None
