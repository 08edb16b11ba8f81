"""Which languages lid.176 identifies well enough for ``langid.backend: auto`` to use fastText alone.

    python -m raycorpus.process.filters.langid_tune ../shared/data/langid/sample_20_per_lang.jsonl [--write]

Measured per language on a labelled sample ({"lang", "text"} jsonl; the shared one is lingua's test sentences, 20
per language, 75 languages), split per language into a TUNING half and a VALIDATION half by a fixed seeded hash
(:func:`split`). For each language L, the figure is the F1 of ``keep: [L]`` at the default threshold (0.65): a
sentence counts as kept when labelled L with a score at or above it, so a right label below the threshold is a
miss and another language's sentence kept as L a false keep. Both backends are scored as ``auto`` would build them
for ``keep: [L]``: fastText alone, and the ensemble with lingua restricted to L's script.

The rule, chosen on the tuning half only: L is *well identified* when fastText's F1 is at least ``theta``, and
``theta`` is the lowest F1 level at which no language at or above it loses more than ``MAX_GAP`` of F1 to the
ensemble on the tuning half (about one sentence of ten). The languages are written to
``raycorpus/data/langid_fasttext_languages.json`` (with ``--write``) with every figure of both halves; the
validation half reports how the rule holds on sentences it was not chosen on. Rerun after a change of the model,
the ensemble or the sample.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from raycorpus.process.filters.langcodes import canonical
from raycorpus.process.filters.langid_backends import LID176, UNKNOWN, lingua_languages, make_backend, script_group

OUT = Path(__file__).resolve().parents[2] / "data" / "langid_fasttext_languages.json"
SEED = 27  # issue 27
THRESHOLD = 0.65  # the default langid.threshold
MAX_GAP = 0.06  # F1 a language may lose to the ensemble on the tuning half and still count as well identified
SOURCE = "pemistahl/lingua-py language-testdata/sentences (Leipzig corpora), Apache-2.0: 20 sentences per language"

Row = tuple[str, str]  # (canonical language, text)
Prediction = tuple[str, float]


def read_sample(path: str | Path) -> list[Row]:
    """(canonical language, text) of every line of a {"lang", "text"} jsonl file."""
    rows = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            rows.append((canonical(row["lang"]), row["text"]))
    return rows


def split(rows: Sequence[Row], seed: int = SEED) -> tuple[list[int], list[int]]:
    """(tuning, validation) row indices: per language, its rows ordered by a hash of (seed, language, text), the
    first half (rounded down) tuning and the rest validation. Fixed for a given file and seed, in any process."""
    by_lang: dict[str, list[int]] = defaultdict(list)
    for i, (lang, _) in enumerate(rows):
        by_lang[lang].append(i)
    tuning, validation = [], []
    for lang, idx in sorted(by_lang.items()):
        idx.sort(key=lambda i: hashlib.blake2b(f"{seed}:{lang}:{rows[i][1]}".encode(), digest_size=8).digest())
        tuning += idx[: len(idx) // 2]
        validation += idx[len(idx) // 2:]
    return sorted(tuning), sorted(validation)


def keep_scores(rows: Sequence[Row], preds: Sequence[Prediction], idx: Sequence[int], lang: str,
                threshold: float = THRESHOLD) -> dict[str, Any]:
    """``keep: [lang]`` on the rows ``idx``: kept right (tp), kept wrong (fp), ``lang``'s rows (n) and F1."""
    tp = sum(1 for i in idx if rows[i][0] == lang and preds[i][0] == lang and preds[i][1] >= threshold)
    fp = sum(1 for i in idx if rows[i][0] != lang and preds[i][0] == lang and preds[i][1] >= threshold)
    n = sum(1 for i in idx if rows[i][0] == lang)
    f1 = 2 * tp / (2 * tp + fp + (n - tp)) if n + fp else 0.0
    return {"tp": tp, "fp": fp, "n": n, "f1": round(f1, 4)}


def choose_theta(fasttext_f1: dict[str, float], ensemble_f1: dict[str, float], max_gap: float = MAX_GAP) -> float:
    """The lowest F1 level at which no language with fastText's F1 at or above it loses more than ``max_gap`` to
    the ensemble (both measured on the tuning half); above every language (nothing is well identified) if none."""
    theta = 1.0 + 1e-9
    for level in sorted(set(fasttext_f1.values()), reverse=True):
        if any(ensemble_f1[k] - f > max_gap + 1e-9 for k, f in fasttext_f1.items() if f >= level):
            break
        theta = level
    return theta


def predictions(rows: Sequence[Row], model: str = LID176) -> tuple[list[Prediction], dict[str, list[Prediction]]]:
    """fastText's predictions, and the ensemble's as ``auto`` builds it for ``keep: [L]``, by L's script (lingua's
    models are loaded once per process, whatever the number of detectors)."""
    from raycorpus.process.filters.langid import predict_one

    fasttext = make_backend("fasttext", model)
    ft = [predict_one(fasttext, text) for _, text in rows]
    ensemble: dict[str, list[Prediction]] = {}
    for lang in sorted({lang for lang, _ in rows}):
        group = script_group(lang)
        if group not in ensemble:
            backend = make_backend("ensemble", model, [lang])
            assert backend.lingua.languages == lingua_languages([lang])
            ensemble[group] = [predict_one(backend, text) for _, text in rows]
    return ft, {lang: ensemble[script_group(lang)] for lang, _ in rows}


def tune(rows: Sequence[Row], ft: Sequence[Prediction], ens: dict[str, Sequence[Prediction]], *, seed: int = SEED,
         threshold: float = THRESHOLD, max_gap: float = MAX_GAP) -> dict[str, Any]:
    """The table: the rule's parameters, the languages, and every language's figures on both halves."""
    tuning, validation = split(rows, seed)
    langs = sorted({lang for lang, _ in rows})
    per = {lang: {half: {"fasttext": keep_scores(rows, ft, idx, lang, threshold),
                         "ensemble": keep_scores(rows, ens[lang], idx, lang, threshold)}
                  for half, idx in (("tuning", tuning), ("validation", validation))}
           for lang in langs}
    theta = choose_theta({k: v["tuning"]["fasttext"]["f1"] for k, v in per.items()},
                         {k: v["tuning"]["ensemble"]["f1"] for k, v in per.items()}, max_gap)
    well = [k for k in langs if per[k]["tuning"]["fasttext"]["f1"] >= theta]

    def mean(half: str, backend: str, which: Callable[[str], bool]) -> float:
        values = [per[k][half][backend]["f1"] for k in langs if which(k)]
        return round(statistics.fmean(values), 4) if values else 0.0

    def auto_f1(half: str) -> float:
        return round(statistics.fmean(per[k][half]["fasttext" if k in well else "ensemble"]["f1"] for k in langs), 4)

    summary = {half: {"well_identified_fasttext_f1": mean(half, "fasttext", lambda k: k in well),
                      "well_identified_ensemble_f1": mean(half, "ensemble", lambda k: k in well),
                      "auto_f1": auto_f1(half), "fasttext_f1": mean(half, "fasttext", bool),
                      "ensemble_f1": mean(half, "ensemble", bool)}
               for half in ("tuning", "validation")}
    losses = sorted(((round(per[k]["validation"]["ensemble"]["f1"] - per[k]["validation"]["fasttext"]["f1"], 4), k)
                     for k in well), reverse=True)
    summary["validation"]["largest_losses_to_ensemble"] = [[k, gap] for gap, k in losses[:8] if gap > 0]
    return {
        "generated_by": "python -m raycorpus.process.filters.langid_tune ../shared/data/langid/sample_20_per_lang.jsonl"
                        " --write",
        "what": "languages lid.176 identifies well enough for langid.backend: auto to use fastText alone",
        "rule": f"F1 of keep: [L] at threshold {threshold} (tp = L's sentences labelled L at or above it, fp = other "
                "sentences labelled L at or above it) of fastText >= theta on the tuning half; theta = the lowest "
                f"F1 at which no language at or above it loses more than {max_gap} of F1 to the ensemble "
                "(lingua restricted to L's script) on the tuning half",
        "model": LID176, "sample": {"source": SOURCE, "rows": len(rows), "languages": len(langs)},
        "split": {"seed": seed, "how": "per language, rows ordered by blake2b(f'{seed}:{lang}:{text}', 8 bytes); the "
                  "first half (rounded down) tunes, the rest validates", "tuning": len(tuning),
                  "validation": len(validation)},
        "threshold": threshold, "max_gap": max_gap, "theta": theta,
        "languages": well, "summary": summary, "per_language": per,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("sample", help="labelled sentences, {\"lang\", \"text\"} jsonl")
    ap.add_argument("--write", action="store_true", help=f"write {OUT.relative_to(OUT.parents[2])}")
    ap.add_argument("--check", action="store_true", help="exit 1 unless the packaged list is what the rule gives")
    args = ap.parse_args(argv)
    rows = read_sample(args.sample)
    table = tune(rows, *predictions(rows))
    if UNKNOWN[0] in table["languages"]:
        raise SystemExit("the sample holds unlabelled rows")
    text = json.dumps(table, indent=1, ensure_ascii=False) + "\n"
    if args.write:
        OUT.write_text(text, encoding="utf-8")
    if args.check:
        packaged = json.loads(OUT.read_text(encoding="utf-8"))["languages"]
        if packaged != table["languages"]:
            print(f"packaged {packaged}\nmeasured {table['languages']}")
            return 1
    print(f"theta {table['theta']}: {len(table['languages'])} languages: {' '.join(table['languages'])}")
    print(json.dumps(table["summary"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
