"""Streaming reader for Common Crawl ``warc.paths`` / ``warc.paths.gz`` manifests (core, no Ray)."""

from __future__ import annotations

import gzip
import io
import os
import re
from collections.abc import Iterator

from raycorpus.storage import Storage, join_url

__all__ = ["ManifestError", "count_manifest", "iter_manifest", "iter_manifest_entries"]

_GZIP_MAGIC = b"\x1f\x8b"
_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:")


class ManifestError(ValueError):
    """The manifest is malformed or a line cannot be resolved safely."""


def _check_relative(line: str) -> str | None:
    """Why ``line`` is not a safe relative path, or None if it is."""
    if _SCHEME_RE.match(line):
        return "has a URL scheme"
    if line.startswith("/"):
        return "is an absolute path"
    if "\\" in line:
        return "contains a backslash"
    if any(segment in (".", "..") for segment in line.split("/")):
        return "contains a '.' or '..' segment"
    return None


def _manifest_dir(url: str) -> str:
    if "://" in url:
        return url.rsplit("/", 1)[0]
    return os.path.dirname(url)


def _resolve_without_base(line: str, manifest_dir: str) -> str:
    if _SCHEME_RE.match(line) or line.startswith("/"):
        return line
    return join_url(manifest_dir, line)


def iter_manifest(url: str, base: str | None, storage: Storage) -> Iterator[str]:
    """Yield the resolved WARC URL of each non-empty, non-comment manifest line, in file order."""
    for _, resolved in iter_manifest_entries(url, base, storage):
        yield resolved


def iter_manifest_entries(url: str, base: str | None, storage: Storage) -> Iterator[tuple[str, str]]:
    """Yield (line as written, resolved WARC URL) for each WARC of the manifest, in file order.

    The line is the WARC's identity in shards and ledger (the same whether it is read from
    s3://commoncrawl/ or a mirror); the URL is where it is read from.

    With ``base`` every line must be a safe relative path joined to ``base``; without it,
    URLs and absolute paths are used as is and relative lines resolve against the
    manifest's own directory. Gzip is detected by magic bytes. Streams the file.
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
                if base:
                    problem = _check_relative(line)
                    if problem:
                        raise ManifestError(
                            f"{url}: line {lineno} {problem} but a base is set (need a relative path): {line!r}"
                        )
                    yield line, join_url(base, line)
                else:
                    yield line, _resolve_without_base(line, manifest_dir)
        except (UnicodeDecodeError, gzip.BadGzipFile, EOFError) as exc:
            raise ManifestError(f"{url}: unreadable after line {lineno}: {exc}") from exc


def count_manifest(url: str, base: str | None, storage: Storage) -> int:
    """Number of WARC URLs in the manifest (streams, validates every line)."""
    return sum(1 for _ in iter_manifest(url, base, storage))
