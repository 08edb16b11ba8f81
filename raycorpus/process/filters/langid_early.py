"""Choosing the fastText language ID's early exit (``filters.langid.early_exit``): its windows and margin
(``EARLY_WINDOWS`` and ``EARLY_MARGIN`` of :mod:`~raycorpus.process.filters.langid_backends`).

    python -m raycorpus.process.filters.langid_early ../shared [--json OUT]

A text longer than ``MAX_CHARS`` is first predicted on ``k`` evenly spaced windows of the same width as the
full path's (``MAX_CHARS // WINDOWS`` characters each, the first at its start, the last at its end); when the top
probability is at least ``margin`` that is the answer, else the text is predicted on the full ``WINDOWS``
windows as before. A text of at most ``MAX_CHARS`` characters (every sentence of the labelled sample) is
predicted as before.

Two sets, each split into a TUNING and a VALIDATION half by a fixed hash: the extracted pages of ``../shared``
(trafilatura-eval, readability, the WARCs; no labels: the reference is the full path's label) and documents
built from the labelled sample (:func:`labelled_documents`: a language's sentences of one half of
:func:`raycorpus.process.filters.langid_tune.split`, concatenated in rotated orders to more than ``MAX_CHARS``).
``(k, margin)`` is chosen on the tuning halves only (:func:`choose`): no label and no ``keep: [en]`` decision
(threshold 0.65) other than the full path's, no lower accuracy on the labelled documents, and the fewest
characters predicted per windowed text. The validation halves report how it holds.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from raycorpus.process.filters.langid_backends import LID176, MAX_CHARS, WINDOWS, FastTextBackend, early_line
from raycorpus.process.filters.langid_tune import SEED, THRESHOLD, read_sample, split
from raycorpus.process.filters.resources import fasttext_line

KS = (1, 2, 3, 4)
MARGINS = (0.7, 0.8, 0.85, 0.9, 0.93, 0.95, 0.97, 0.99)
Prediction = tuple[str, float]


def halves(texts: Sequence[str], seed: int = SEED) -> tuple[list[int], list[int]]:
    """(tuning, validation) indices of ``texts``: ordered by a hash of (seed, text), the first half tuning."""
    idx = sorted(range(len(texts)), key=lambda i: hashlib.blake2b(f"{seed}:{texts[i]}".encode(),
                                                                     digest_size=8).digest())
    return sorted(idx[: len(idx) // 2]), sorted(idx[len(idx) // 2:])


def labelled_documents(rows: Sequence[tuple[str, str]], idx: Sequence[int]) -> list[tuple[str, str]]:
    """(language, document) pairs longer than ``MAX_CHARS``: for each language, one document per sentence of
    ``idx``, its sentences in an order rotated by one more each time, repeated until long enough."""
    by_lang: dict[str, list[str]] = defaultdict(list)
    for i in idx:
        by_lang[rows[i][0]].append(rows[i][1])
    docs = []
    for lang, sents in sorted(by_lang.items()):
        for j in range(len(sents)):
            order, parts = sents[j:] + sents[:j], []
            while sum(map(len, parts)) + len(parts) <= MAX_CHARS:
                parts += order
                order = order[1:] + order[:1]
            docs.append((lang, "\n".join(parts)))
    return docs


def predictions(top: Callable[[str], Prediction], texts: Sequence[str], ks: Sequence[int] = KS) -> list[dict]:
    """Per text longer than ``MAX_CHARS``: the full path's prediction and characters, and each ``k``'s."""
    out = []
    for text in texts:
        full = fasttext_line(text, MAX_CHARS, WINDOWS)
        rec = {"full": top(full), "full_chars": len(full)}
        for k in ks:
            line = early_line(text, k)
            rec[k] = (top(line), len(line))
        out.append(rec)
    return out


def _kept(p: Prediction) -> bool:
    return p[0] == "en" and p[1] >= THRESHOLD


def score(recs: Sequence[dict], k: int, margin: float, truth: Sequence[str] | None = None) -> dict[str, Any]:
    """The early exit ``(k, margin)`` on ``recs`` against the full path: exits, changed labels and ``keep:
    [en]`` decisions, the largest score change, characters predicted (share of the full path's) and, with
    ``truth``, the accuracy of both."""
    exits = labels = decisions = 0
    chars = full_chars = 0
    max_delta, answers = 0.0, []
    for rec in recs:
        (early, n), full = rec[k], rec["full"]
        full_chars += rec["full_chars"]
        chars += n
        if early[1] >= margin:
            exits += 1
            labels += early[0] != full[0]
            decisions += _kept(early) != _kept(full)
            max_delta = max(max_delta, abs(early[1] - full[1]))
            answers.append(early)
        else:
            chars += rec["full_chars"]
            answers.append(full)
    r = {"k": k, "margin": margin, "texts": len(recs), "exits": exits, "changed_labels": labels,
         "changed_decisions": decisions, "max_score_change": round(max_delta, 4),
         "chars_share": round(chars / max(full_chars, 1), 4)}
    if truth is not None:
        r["accuracy_full"] = round(sum(rec["full"][0] == t for rec, t in zip(recs, truth, strict=True)) / len(recs), 4)
        r["accuracy_early"] = round(sum(a[0] == t for a, t in zip(answers, truth, strict=True)) / len(recs), 4)
    return r


def choose(pages: Sequence[dict], docs: Sequence[dict], truth: Sequence[str]) -> tuple[int, float]:
    """The ``(k, margin)`` with no changed label or decision on ``pages`` and ``docs``, no lower accuracy on
    ``docs``, and the fewest characters predicted on ``pages`` (ties: the higher margin)."""
    ok = []
    for k in KS:
        for margin in MARGINS:
            p, d = score(pages, k, margin), score(docs, k, margin, truth)
            if p["changed_labels"] or p["changed_decisions"] or d["changed_labels"] or d["changed_decisions"]:
                continue
            if d["accuracy_early"] < d["accuracy_full"]:
                continue
            ok.append((p["chars_share"], -margin, k))
    if not ok:
        raise ValueError("no early exit keeps every label of the tuning halves")
    _, neg_margin, k = min(ok)
    return k, -neg_margin


def evaluate(shared: str | Path, model: str = LID176) -> dict[str, Any]:
    """Choose ``(k, margin)`` on the tuning halves of the pages and labelled documents under ``shared``; the
    figures of both halves."""
    from raycorpus.cli.langid_eval import extraction_page_texts, real_page_texts

    shared = Path(shared)
    texts = extraction_page_texts(shared / "data" / "extraction") + real_page_texts(shared / "data" / "warc")
    texts = sorted({t for t in texts if len(t) > MAX_CHARS})
    rows = read_sample(shared / "data" / "langid" / "sample_20_per_lang.jsonl")
    top = FastTextBackend(model).top
    page_halves = halves(texts)
    pages = [predictions(top, [texts[i] for i in idx]) for idx in page_halves]
    docs = [labelled_documents(rows, idx) for idx in split(rows)]
    doc_preds = [predictions(top, [d for _, d in half]) for half in docs]
    truth = [[lang for lang, _ in half] for half in docs]
    k, margin = choose(pages[0], doc_preds[0], truth[0])
    report: dict[str, Any] = {"k": k, "margin": margin, "max_chars": MAX_CHARS, "windows": WINDOWS}
    for name, h in (("tuning", 0), ("validation", 1)):
        report[name] = {"pages": score(pages[h], k, margin), "labelled": score(doc_preds[h], k, margin, truth[h])}
    report["grid_tuning_pages"] = [score(pages[0], kk, m) for kk in KS for m in MARGINS]
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("shared", help="the ../shared folder")
    ap.add_argument("--json", help="write the whole report here")
    args = ap.parse_args(argv)
    report = evaluate(args.shared)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in report.items() if k != "grid_tuning_pages"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
