"""The per-WARC document chain, Ray-free: read -> HTML 200 -> decode -> extract -> filters -> hash.

A :class:`WarcProcessor` turns one WARC url into one :class:`WarcResult`; the runtime
layer wraps it in a stateless actor. Each step either keeps a document or drops it with
a reason (``stage:reason``), so every drop is counted; a bad document never fails the
WARC. A file that is not readable as a WARC raises (:class:`raycorpus.ingest.warc.WarcFormatError`
or the storage error), and the driver retries it, then lists it as failed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections import Counter
from collections.abc import Mapping

import numpy as np

from raycorpus import counts as ck
from raycorpus.config import Config
from raycorpus.ingest.split import WarcPart, open_part
from raycorpus.ingest.storage import Storage
from raycorpus.ingest.warc import HtmlRecord, TextRecord, iter_html_records, iter_text_records
from raycorpus.output.docfiles import EXCLUSIONS_DIR, write_jsonl_zst
from raycorpus.process.dedup.paragraphs import ParagraphHasher, Paragraphs
from raycorpus.process.dedup.sketch import Signer
from raycorpus.process.dedup.urlkey import url_key
from raycorpus.process.document import Document
from raycorpus.process.extract import Extractor
from raycorpus.process.filters import Chain
from raycorpus.process.hashing import folded, normalized_utf8
from raycorpus.process.profile import ProfileRecorder, SampleBounds
from raycorpus.process.results import WarcResult
from raycorpus.process.tokenize import TokenEncoder

READ_NS, EXTRACT_NS, HASH_NS, URL_KEY_NS, MINHASH_NS, TOKENIZE_NS, PARAGRAPHS_NS = (
    ck.time_in(s) for s in ("read", "extract", "hash", "url_key", "minhash", "tokenize", "paragraphs"))


def content_hash(text: str) -> int:
    """64-bit hash of the normalised text (stable across processes and machines)."""
    return content_hash_of(folded(text))


def content_hash_of(cp: np.ndarray) -> int:
    """:func:`content_hash` of the text whose :func:`~raycorpus.process.hashing.folded` code points are ``cp``
    (the same bytes are hashed: ``normalized_utf8(cp) == normalize(text).encode(...)``)."""
    digest = hashlib.blake2b(normalized_utf8(cp), digest_size=8)
    return int.from_bytes(digest.digest(), "little")


class WarcProcessor:
    """Builds the document chain once; ``process`` runs it over one WARC."""

    def __init__(self, cfg: Config, with_filters: bool = True, resources: Mapping[str, object] | None = None,
                 encoder: TokenEncoder | None = None):
        """``resources``: the chain's shared resources, built once per run (``Chain.shared_resources``);
        None builds them here. ``encoder``: tokenize the documents that passed (the workers do; the
        committer then only drops the duplicates' tokens)."""
        self.cfg = cfg
        self.encoder = encoder
        self.storage = Storage(cfg.storage)
        self.extractor = Extractor(cfg.extract)
        self.chain = Chain(cfg.filters, resources, self.storage) if with_filters else None
        self.exclusions = cfg.filters.exclusions
        self.read_records = iter_text_records if cfg.input.format == "wet" else iter_html_records
        self.tag = self.chain is not None and self.chain.tag  # list extraction drops (`raycorpus select` reads them)
        self.report = cfg.output.report
        self.recorder: ProfileRecorder | None = None  # the WARC being processed's, when the output has a report
        d = cfg.dedup
        self.minhasher = Signer(d.num_perm, d.ngram, d.seed, d.verify_sketch == "oph", d.oph_bits) if d.near else None
        if self.minhasher is not None:
            self.minhasher.signature("warm up")  # builds its code-point table once, at start-up
        self.paragraphs = ParagraphHasher(d.paragraphs.min_chars) if d.paragraphs.enabled else None

    def process(self, ordinal: int, url: str, part: WarcPart | None = None,
                bounds: SampleBounds | None = None) -> WarcResult:
        """The WARC's result, or (``part``) the result of the records of one range of it. ``bounds``: per sample
        pool, the largest key that can still enter the report's sample (from the head; None: any)."""
        t0 = time.perf_counter()
        r = self.report
        self.recorder = (ProfileRecorder(ordinal, r.samples_passed, r.samples_per_reason, r.sample_chars, bounds)
                         if r.enabled else None)
        counts: Counter = Counter()
        docs: list[Document] = []
        hashes: list[int] = []
        url_keys: list[int] = []
        sigs: list[np.ndarray] = []
        excluded: list[dict] = []
        failed: list[tuple[str, str]] | None = [] if self.tag else None
        clock = time.perf_counter_ns
        with open_part(self.storage, url, part) as stream:
            records = self.read_records(stream, counts, self.cfg.warc.max_record_bytes, self.cfg.warc.quirks_mode)
            while True:
                t = clock()
                rec = next(records, None)
                counts[READ_NS] += clock() - t
                if rec is None:
                    break
                counts[ck.HTML] += 1
                doc = self._document(rec, counts, excluded, failed)
                if doc is None or not self._hash(doc, counts, excluded, hashes, sigs, url_keys):
                    continue
                counts[ck.KEPT] += 1
                if self.recorder is not None:
                    self.recorder.decided(doc, len(docs))
                docs.append(doc)
            bytes_read = stream.tell() - (part.start if part else 0)
        if self.exclusions.enabled and excluded:  # a WARC cut into ranges has none (the driver does not cut it)
            self._write_exclusions(ordinal, excluded)
        result = WarcResult(ordinal, url, docs, np.array(hashes, dtype=np.uint64), self._stack(sigs), counts,
                            bytes_read, 0.0)
        if self.cfg.dedup.url:
            result.url_hashes = np.array(url_keys, dtype=np.uint64)
        result.extract_failed = failed
        if self.encoder is not None:
            self._encode(result, counts)
        if self.recorder is not None:
            result.profile, self.recorder = self.recorder.finish(result.lengths), None
        result.seconds = time.perf_counter() - t0
        return result

    def _encode(self, result: WarcResult, counts: Counter) -> None:
        encode_result(result, self.encoder, self.paragraphs, counts)

    def _document(self, rec: HtmlRecord | TextRecord, counts: Counter, excluded: list[dict],
                  failed: list[tuple[str, str]] | None = None) -> Document | None:
        """The record's document after extraction (a WET record's text as it is) and the filter chain,
        or None (dropped, counted)."""
        if self.chain and (reason := self.chain.check_url(rec.url, counts)):
            self._exclude(excluded, rec.url, rec.record_id, None, reason)
            return None
        if isinstance(rec, TextRecord):
            doc = Document(text=rec.text.strip(), url=rec.url, record_id=rec.record_id, date=rec.date, metadata={})
        else:
            t = time.perf_counter_ns()
            text, reason = self.extractor(rec)
            counts[EXTRACT_NS] += time.perf_counter_ns() - t
            if text is None:
                counts[ck.drop("extract", reason)] += 1
                if failed is not None:
                    failed.append((rec.url, reason))
                self._exclude(excluded, rec.url, rec.record_id, None, f"extract:{reason}")
                return None
            doc = Document(text=text, url=rec.url, record_id=rec.record_id, date=rec.date,
                           metadata={"charset": rec.charset})
        signals = self.recorder.signal if self.recorder is not None else None
        if self.chain and (reason := self.chain(doc, counts, signals)):
            self._exclude(excluded, doc.url, doc.record_id, doc, reason)
            return None
        return doc

    def _hash(self, doc: Document, counts: Counter, excluded: list[dict], hashes: list[int],
              sigs: list[np.ndarray], url_keys: list[int]) -> bool:
        """Add the document's content hash, URL key and MinHash signature; False if hashing broke (a counted
        drop)."""
        clock = time.perf_counter_ns
        try:
            t = clock()
            cp = folded(doc.text)  # NFKC + lowercase once, for the content hash and the shingles
            digest = content_hash_of(cp)
            t_url = clock()
            key = url_key(doc.url) if self.cfg.dedup.url else 0
            t_hashed = clock()
            sig = self.minhasher.signature_of(cp) if self.minhasher else None
        except Exception:  # one document that breaks hashing is one dropped document, never the WARC
            counts[ck.drop("error", "hash")] += 1
            self._exclude(excluded, doc.url, doc.record_id, doc, "error:hash")
            return False
        counts[HASH_NS] += t_url - t
        counts[URL_KEY_NS] += t_hashed - t_url
        hashes.append(digest)
        url_keys.append(key)
        if sig is not None:
            counts[MINHASH_NS] += clock() - t_hashed
            sigs.append(sig)
        return True

    def _stack(self, sigs: list[np.ndarray]) -> np.ndarray | None:
        if self.minhasher is None:
            return None
        return np.stack(sigs) if sigs else np.empty((0, self.minhasher.width), np.uint32)

    def _exclude(self, out: list[dict], url: str, record_id: str, doc: Document | None, reason: str) -> None:
        """A dropped record: into the report's profile, and a sampled record of it into the exclusions
        (sampling is by record id: deterministic)."""
        if self.recorder is not None:
            self.recorder.dropped(url, record_id, reason, doc)
        if not self.exclusions.enabled:
            return
        h = hashlib.blake2b(record_id.encode(), digest_size=8).digest()
        if int.from_bytes(h, "little") / 2**64 >= self.exclusions.sample_rate:
            return
        row: dict = {"url": url, "record_id": record_id, "reason": reason}
        if doc is not None:
            row["text"] = doc.text
            row["metadata"] = doc.metadata
        out.append(row)

    def _write_exclusions(self, ordinal: int, rows: list[dict]) -> None:
        write_jsonl_zst(self.storage, self.cfg.output.path, EXCLUSIONS_DIR, ordinal, rows)


def encode_result(result: WarcResult, encoder: TokenEncoder, paragraphs: ParagraphHasher | None,
                  counts: Counter | None = None) -> None:
    """Tokenize the result's documents; with paragraph dedup (``paragraphs``), cut each into its paragraphs, key
    them, and encode them piece by piece (the same ids: see :mod:`raycorpus.process.dedup.paragraphs`). ``counts``:
    where the time goes (the chain's per-stage figures)."""
    clock = time.perf_counter_ns
    counts = Counter() if counts is None else counts
    texts = [d.text for d in result.docs]
    t = clock()
    if paragraphs is None:
        result.tokens, result.lengths = encoder.encode(texts)
        counts[TOKENIZE_NS] += clock() - t
        return
    split, pieces = Paragraphs.of(texts, paragraphs)
    t_split = clock()
    result.tokens, result.lengths, tokens = encoder.encode_pieces(pieces)
    counts[PARAGRAPHS_NS] += t_split - t
    counts[TOKENIZE_NS] += clock() - t_split
    result.paragraphs = dataclasses.replace(split, tokens=tokens)
