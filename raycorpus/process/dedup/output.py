"""Applying a WARC's dedup decision to its documents: drop (or tag) duplicates, write the audit file."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from raycorpus.ingest.storage import Storage
from raycorpus.output.docfiles import EXCLUSIONS_DIR, write_jsonl_zst
from raycorpus.process.dedup.index import KEEP, KINDS, PARAGRAPHS, Decision, split_gid
from raycorpus.process.dedup.paragraphs import split_paragraphs
from raycorpus.process.dedup.prior import prior_number
from raycorpus.process.document import Document

AUDIT_PREFIX = "dedup-"


@dataclass(slots=True)
class DedupVerdict:
    """What the committer decided for one WARC, as the tokenizer applies it."""

    decision: Decision
    audit: bool  # write the dropped duplicates to the audit file
    against: tuple[str, ...] = ()  # dedup.against: the earlier outputs a prior match names


def doc_id(gid: int) -> str:
    """A document's id in documents/ and audit files: ``<WARC ordinal>/<index among its filtered docs>``."""
    ordinal, index = split_gid(gid)
    return f"{ordinal}/{index}"


def _removed_paragraphs(docs: list[Document], removed: np.ndarray | None) -> list[tuple[list[str], list]] | None:
    """Per document, its paragraphs and which of them dedup.paragraphs removed (None: paragraph dedup is off)."""
    if removed is None:
        return None
    out, at = [], 0
    for doc in docs:
        parts = split_paragraphs(doc.text)
        out.append((parts, removed[at : at + len(parts)].tolist()))
        at += len(parts)
    if at != removed.size:
        raise ValueError(f"dedup decided {removed.size} paragraphs, the documents hold {at}")
    return out


def apply_decision(storage: Storage, out_url: str, ordinal: int, warc: str, docs: list[Document],
                   verdict: DedupVerdict, tag: bool) -> list[Document]:
    """The documents to tokenize: the kept ones (filter mode) or all, duplicates tagged (tag mode)."""
    decision = verdict.decision
    kind, dup_of, jac = decision.kind, decision.dup_of, decision.jaccard
    if len(kind) != len(docs):
        raise ValueError(f"WARC #{ordinal}: dedup decision for {len(kind)} documents, got {len(docs)}")
    eligible = decision.eligible
    out, audit = [], []
    index = -1  # ids count only the documents that took part (in tag mode: those no filter would drop)
    removed = _removed_paragraphs(docs, decision.paragraphs)
    for i, doc in enumerate(docs):
        if eligible is not None and not eligible[i]:
            out.append(doc)
            continue
        index += 1
        doc.metadata["id"] = f"{ordinal}/{index}"
        if kind[i] == KEEP:
            if removed is not None and any(removed[i][1]):  # the text its tokens hold
                doc.text = "".join(p for p, gone in zip(*removed[i], strict=True) if not gone)
            out.append(doc)
            continue
        reason = f"dedup:{KINDS[int(kind[i])]}"
        match = {"dup_of": None if kind[i] == PARAGRAPHS else doc_id(dup_of[i]),
                 "jaccard": None if np.isnan(jac[i]) else round(float(jac[i]), 4)}
        if (number := prior_number(dup_of[i])) is not None:  # an earlier output's document: name the output
            match["dup_of_output"] = verdict.against[number]
        if tag:
            doc.metadata["dedup"] = match
            doc.metadata.setdefault("would_drop", []).append(reason)
            out.append(doc)
        elif verdict.audit:
            audit.append({"id": f"{ordinal}/{index}", "url": doc.url, "record_id": doc.record_id, "warc": warc,
                          "reason": reason, **match, "text": doc.text})
    if audit:
        write_jsonl_zst(storage, out_url, EXCLUSIONS_DIR, ordinal, audit, prefix=AUDIT_PREFIX)
    return out
