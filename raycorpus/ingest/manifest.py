"""Streaming reader for Common Crawl ``warc.paths`` / ``warc.paths.gz`` manifests (core, no Ray).

Manifest lines are data, not trusted paths. With ``input.base`` set, every line must be a
relative path (no URL scheme, no leading ``/``, no ``.`` / ``..`` segment, also percent-encoded,
no backslash or control character) and is joined to the base. Without a base, URLs and
absolute paths are used as written, but only with a scheme storage reads (``s3``, ``http(s)``,
``file``) and without ``.`` / ``..`` segments; relative lines resolve against the manifest's
folder. A line that breaks these rules is not read: :func:`iter_manifest_entries` yields it
with the problem, and the driver lists it as failed at its place in the order, so the rest
of the run goes on. Nothing written derives from a line: shards, ledger, documents and
dedup records are named by the WARC's ordinal.
"""

from __future__ import annotations

import gzip
import io
import os
import re
import urllib.parse
from collections.abc import Iterator
from typing import NamedTuple

from raycorpus.ingest.storage import Storage, join_url

__all__ = ["ManifestEntry", "ManifestError", "count_manifest", "iter_input_entries", "iter_input_urls", "iter_manifest",
           "iter_manifest_entries", "iter_prefix_entries"]

_GZIP_MAGIC = b"\x1f\x8b"
_SCHEME_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*):")
_READABLE_SCHEMES = ("s3", "http", "https", "file")
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f]")


class ManifestError(ValueError):
    """The manifest is malformed or a line cannot be resolved safely."""


class ManifestEntry(NamedTuple):
    line: str  # as written: the WARC's identity in shards and ledger
    url: str  # where it is read from; "" when the line is rejected
    problem: str | None = None  # why the line is rejected (then it is never read)


def _dot_segment(path: str) -> bool:
    return any(urllib.parse.unquote(segment) in (".", "..") for segment in re.split(r"[/\\]", path))


def _check_line(line: str, base: str | None) -> str | None:
    """Why ``line`` may not be read, or None if it may."""
    if _CONTROL_RE.search(line):
        return "contains a control character"
    scheme = _SCHEME_RE.match(line)
    if base:
        if scheme:
            return "has a URL scheme"
        if line.startswith("/"):
            return "is an absolute path"
        if "\\" in line:
            return "contains a backslash"
    elif scheme and scheme.group(1).lower() not in _READABLE_SCHEMES:
        return f"has a URL scheme storage does not read ({scheme.group(1)}:)"
    if _dot_segment(line):
        return "contains a '.' or '..' segment"
    return None


def _manifest_dir(url: str) -> str:
    if "://" in url:
        return url.rsplit("/", 1)[0]
    return os.path.dirname(url)


def _resolve(line: str, base: str | None, manifest_dir: str) -> str:
    if base:
        return join_url(base, line)
    if _SCHEME_RE.match(line) or line.startswith("/"):
        return line
    return join_url(manifest_dir, line)


def iter_manifest(url: str, base: str | None, storage: Storage) -> Iterator[str]:
    """Yield the resolved WARC URL of each non-empty, non-comment manifest line, in file order.

    Strict: raises :class:`ManifestError` at the first rejected line (for tools that read a few
    WARCs, such as tokenizer training and ``bench``; a run lists such lines as failed instead).
    """
    for entry in iter_manifest_entries(url, base, storage):
        if entry.problem:
            raise ManifestError(entry.problem)
        yield entry.url


def iter_manifest_entries(url: str, base: str | None, storage: Storage) -> Iterator[ManifestEntry]:
    """Yield a :class:`ManifestEntry` for each WARC line of the manifest, in file order.

    The line is the WARC's identity in shards and ledger (the same whether it is read from
    s3://commoncrawl/ or a mirror); the URL is where it is read from. A rejected line comes
    with ``url=""`` and its problem (the message names the manifest, line number and line).
    Gzip is detected by magic bytes. Streams the file.
    """
    manifest_dir = _manifest_dir(url)
    with storage.open_read(url) as raw:
        stream = gzip.GzipFile(fileobj=raw, mode="rb") if raw.peek(2)[:2] == _GZIP_MAGIC else raw
        text = io.TextIOWrapper(stream, encoding="utf-8", newline=None)
        lineno = 0
        try:
            for lineno, raw_line in enumerate(text, start=1):
                line = raw_line.strip()
                if not line or line.startswith("#"):
                    continue
                problem = _check_line(line, base)
                if problem:
                    need = "a relative path under input.base" if base else "a path under the manifest's folder or a URL"
                    yield ManifestEntry(line, "", f"manifest line rejected: {url}: line {lineno} {problem} "
                                                  f"(need {need}): {line!r}")
                else:
                    yield ManifestEntry(line, _resolve(line, base, manifest_dir))
        except (UnicodeDecodeError, gzip.BadGzipFile, EOFError) as exc:
            raise ManifestError(f"{url}: unreadable after line {lineno}: {exc}") from exc


def count_manifest(url: str, base: str | None, storage: Storage) -> int:
    """Number of WARC lines in the manifest, rejected ones included (a run lists them as failed)."""
    return sum(1 for _ in iter_manifest_entries(url, base, storage))


WARC_SUFFIXES = (".warc", ".warc.gz", ".wet", ".wet.gz")


def iter_prefix_entries(prefix: str, storage: Storage) -> Iterator[ManifestEntry]:
    """Every WARC / WET file under a local folder or s3:// prefix, sorted: the line is its path relative to
    the prefix (hidden files and folders left out)."""
    root = prefix.rstrip("/") + "/"
    for url in storage.list(prefix):
        rel = url.removeprefix(root)
        if rel.endswith(WARC_SUFFIXES) and not any(part.startswith(".") for part in rel.split("/")):
            yield ManifestEntry(rel, url)


def iter_input_entries(inp, storage: Storage) -> Iterator[ManifestEntry]:
    """The entries of a config's input (``InputConfig``): its manifest's lines, or its prefix's WARCs."""
    if inp.prefix:
        return iter_prefix_entries(inp.prefix, storage)
    return iter_manifest_entries(inp.manifest, inp.base, storage)


def iter_input_urls(inp, storage: Storage) -> Iterator[str]:
    """The WARC URLs of a config's input, strictly (:func:`iter_manifest` for a manifest)."""
    if inp.prefix:
        return (e.url for e in iter_prefix_entries(inp.prefix, storage))
    return iter_manifest(inp.manifest, inp.base, storage)
