"""RefinedWeb-style URL filter, run on a record's URL before extraction.

Rules, in order: opt-out domains (always blocked, ``opt_out``), allow domains (never blocked
otherwise), the domain blocklist (``blocked_domain``; a listed domain blocks its subdomains),
the full-URL blocklist (``blocked_url``), banned words (``banned_word``: one listed word is a
token of the URL) and soft-banned words (``soft_banned_words``: ``soft_banned_threshold`` or more
distinct ones). URLs and hosts are compared lowercased, without port, trailing dot and leading ``www.``.

Words are matched as whole tokens of the host, path and query (split on non-alphanumerics,
percent-decoded) and never as substrings: RefinedWeb's substring matching on the whole URL
blocks "essex.ac.uk" for "sex" or ".../analysis" for "anal" (the Scunthorpe problem), and no
list of short words is free of such hits. A substring rule would need its own curated list of
long, unambiguous subwords (datatrove's ``banned_subwords``).
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit

from pydantic import Field

from raycorpus.process.filters.base import Filter, StageSettings
from raycorpus.process.filters.registry import register
from raycorpus.process.filters.resources import read_word_list

_SPLIT = re.compile(r"[\W_]+")


class UrlFilterConfig(StageSettings):
    """RefinedWeb-style URL filtering, before extraction."""

    blocklist_domains: list[str] = Field(
        default_factory=lambda: ["package:url_blocklist_domains.txt"],
        description="files of blocked domains, one per line (a domain blocks its subdomains); "
        "'package:NAME' is a list shipped in raycorpus/data",
    )
    blocklist_urls: list[str] = Field(default_factory=list, description="files of blocked full URLs")
    banned_words: list[str] = Field(
        default_factory=lambda: ["package:url_banned_words.txt"],
        description="files of words; one in the URL's words blocks it",
    )
    soft_banned_words: list[str] = Field(
        default_factory=lambda: ["package:url_soft_banned_words.txt"],
        description="files of words; soft_banned_threshold or more distinct ones in the URL block it",
    )
    soft_banned_threshold: int = Field(
        3, ge=1, description="distinct soft-banned words in a URL that block it")
    allow_domains: list[str] = Field(default_factory=list, description="files of domains never blocked")
    opt_out_domains: list[str] = Field(
        default_factory=list, description="files of domains that asked not to be used (always blocked)"
    )


def _norm_host(host: str) -> str:
    host = host.rsplit("@", 1)[-1].strip().lower()
    if host.startswith("[") and "]" in host:  # IPv6 literal
        return host[1:host.index("]")]
    host = host.split(":", 1)[0].rstrip(".")
    return host[4:] if host.startswith("www.") else host


def _split_url(url: str) -> tuple[str, str]:
    """(normalised host, rest = path and query) of a URL; tolerant of anything."""
    url = url.strip()
    if "://" not in url[:16] and not url.startswith("//"):
        url = "//" + url
    try:
        parts = urlsplit(url)
        host = parts.netloc
        rest = parts.path + ("?" + parts.query if parts.query else "")
    except ValueError:  # e.g. unbalanced IPv6 brackets
        after = url.split("://", 1)[-1].lstrip("/")
        host, _, rest = after.partition("/")
        rest = "/" + rest
    return _norm_host(host), rest


def _norm_domain(entry: str) -> str:
    """A list entry as a host: URLs reduced to their host, ``*.`` / ``.`` prefixes dropped."""
    if "/" in entry:
        return _split_url(entry)[0]
    return _norm_host(entry.lstrip("*").lstrip("."))


def _join(host: str, rest: str) -> str:
    """The normalised URL compared with the URL blocklist: host, path without trailing slash and
    query, lowercased (list files are read lowercased)."""
    path, q, query = rest.partition("?")
    return (host + path.rstrip("/") + (q + query if query else "")).lower()


def _suffixes(host: str, depth: int) -> list[str]:
    """The host's suffixes of at most ``depth`` labels: ``a.b.c``, 2 -> ``b.c``, ``c``."""
    labels = host.rsplit(".", depth)[-depth:]
    return [".".join(labels[i:]) for i in range(len(labels))]


def _load(specs: list[str]) -> list[str]:
    return [e for spec in specs for e in read_word_list(spec)]


@register
class UrlFilter(Filter):
    """``filter(url)`` -> drop reason or None."""

    name = "url"
    settings = UrlFilterConfig
    needs = "url"

    def __init__(self, cfg: UrlFilterConfig):
        self.blocked_domains = frozenset(_norm_domain(e) for e in _load(cfg.blocklist_domains)) - {""}
        self.blocked_urls = frozenset(_join(*_split_url(e)) for e in _load(cfg.blocklist_urls)) - {""}
        self.banned = frozenset(_load(cfg.banned_words))
        self.soft_banned = frozenset(_load(cfg.soft_banned_words))
        self.soft_threshold = cfg.soft_banned_threshold
        self.allow = frozenset(_norm_domain(e) for e in _load(cfg.allow_domains)) - {""}
        self.opt_out = frozenset(_norm_domain(e) for e in _load(cfg.opt_out_domains)) - {""}
        # the most labels a listed domain has: longer suffixes of a host can match nothing
        self.depth = max((d.count(".") + 1 for d in self.blocked_domains | self.allow | self.opt_out), default=1)

    def __call__(self, url: str) -> str | None:
        if not isinstance(url, str):
            return None
        host, rest = _split_url(url)
        suffixes = _suffixes(host, self.depth) if host else []
        if self.opt_out and not self.opt_out.isdisjoint(suffixes):
            return "opt_out"
        if self.allow and not self.allow.isdisjoint(suffixes):
            return None
        if not self.blocked_domains.isdisjoint(suffixes):
            return "blocked_domain"
        if self.blocked_urls and _join(host, rest) in self.blocked_urls:
            return "blocked_url"
        words = set(_SPLIT.split(f"{host} {unquote(rest.replace('+', ' '))}".lower()))
        if not self.banned.isdisjoint(words):
            return "banned_word"
        if self.soft_banned and len(self.soft_banned & words) >= self.soft_threshold:
            return "soft_banned_words"
        return None
