"""URL dedup keys: a page's normalised URL, hashed like a content hash (a 64-bit BLAKE2b) for the exact table.

:func:`normalize_url` lowercases the scheme and host (an internationalised host as its IDNA / punycode
form, so ``bücher.de`` and ``xn--bcher-kva.de`` are one host), drops the scheme's default port and the
fragment, drops the tracking parameters of :data:`TRACKING_PARAMS` (and any ``utm_*``), and keeps
everything else as it was: the path's case, the remaining parameters in their order, their values. An
empty path is ``/``. So a page recrawled at the same address, or reached through a campaign link, has
one key; two pages whose paths or real parameters differ keep two.

:func:`url_key` hashes the normalised URL with BLAKE2b under its own ``person`` (distinct from the
content hash's), so URL keys and content hashes are independent 64-bit values sharing one table: a URL
key meets a content hash with probability 2**-64, the odds of two different texts sharing one.
"""

from __future__ import annotations

import hashlib
from urllib.parse import urlsplit, urlunsplit

#: Query parameters dropped from a URL before it is compared (besides every ``utm_*``): click ids and
#: campaign tags of ad, mail and social platforms, which name the visit rather than the page.
TRACKING_PARAMS = frozenset({
    "fbclid", "gclid", "gclsrc", "dclid", "gbraid", "wbraid", "msclkid", "yclid", "twclid", "ttclid", "li_fat_id",
    "mc_cid", "mc_eid", "_ga", "_gl", "_hsenc", "_hsmi", "igshid", "ref_src", "spm", "scid", "srsltid",
    "mkt_tok", "oly_anon_id", "oly_enc_id", "vero_id", "wickedid", "rb_clickid", "s_cid",
})
DEFAULT_PORTS = {"http": 80, "https": 443}
_PERSON = b"raycorpus-url"  # BLAKE2b personalisation (<= 16 bytes): URL keys are their own hash family


def _is_tracking(param: str) -> bool:
    name = param.split("=", 1)[0].lower()
    return name.startswith("utm_") or name in TRACKING_PARAMS


def _host(host: str) -> str:
    host = host.lower().rstrip(".")
    if host.isascii():
        return host
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:  # not a valid IDNA name: compare it as it is
        return host


def normalize_url(url: str) -> str:
    """The URL as pages are compared (see the module's docstring); unparseable input comes back stripped."""
    url = url.strip()
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:  # e.g. a port out of range or a broken IPv6 literal
        return url
    scheme = parts.scheme.lower()
    host = _host(parts.hostname or "")
    if ":" in host:  # an IPv6 literal keeps its brackets
        host = f"[{host}]"
    if port is not None and port != DEFAULT_PORTS.get(scheme):
        host = f"{host}:{port}"
    if parts.username is not None or parts.password is not None:
        host = parts.netloc.rsplit("@", 1)[0] + "@" + host
    query = "&".join(p for p in parts.query.split("&") if p and not _is_tracking(p))
    path = parts.path or ("/" if host else "")
    return urlunsplit((scheme, host, path, query, ""))


def url_key(url: str) -> int:
    """64-bit key of the normalised URL (0 for an empty URL: it takes no part in URL dedup)."""
    norm = normalize_url(url)
    if not norm:
        return 0
    digest = hashlib.blake2b(norm.encode("utf-8", "surrogatepass"), digest_size=8, person=_PERSON)
    return int.from_bytes(digest.digest(), "little")
