"""``python -m raycorpus.cli.parity``: raycorpus's FineWeb filters against datatrove's own filter classes.

Both sides get the same texts: the shipped extractor's text of every page of ``../shared/data/extraction``
(trafilatura-eval and readability) and of every HTML response in the WARCs of ``../shared/data/warc``. Each
filter sees every page with English settings (FineWeb's); with ``--lang de`` (etc.) the pages lid.176 labels
``de``, with FineWeb-2's settings for it and datatrove's word tokenizer for it. Then the chain runs
(Gopher repetition, Gopher quality, C4 with FineWeb's settings, FineWeb quality: FineWeb's order, after
language ID, which both sides run with the same lid.176 model). Agreement is the share of pages on which both
took the same keep / drop decision. Every disagreement is listed with the signals each side computed.

Needs datatrove and its word tokenizer for the language (spaCy for English: both in the ``test`` extra).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from raycorpus.config import FiltersConfig
from raycorpus.process.document import Document
from raycorpus.process.filters import Filter, TextView
from raycorpus.process.filters.multilingual import language_settings, language_view
from raycorpus.process.filters.registry import stages

STAGES = ("gopher_repetition", "gopher_quality", "c4", "fineweb")
DATATROVE_LANG = {"en": "en", "de": "de", "fr": "fr", "es": "es", "ru": "ru", "zh": "zh", "ja": "ja"}


@dataclass
class Disagreement:
    page: str
    stage: str
    datatrove: str  # "keep" or the drop reason
    raycorpus: str
    signals: dict[str, Any] = field(default_factory=dict)  # raycorpus's, and datatrove's (prefixed dt.)


@dataclass
class Parity:
    lang: str
    pages: int
    same: Counter = field(default_factory=Counter)  # stage (or "chain") -> pages with the same decision
    only_raycorpus: Counter = field(default_factory=Counter)  # stage -> pages raycorpus alone dropped
    only_datatrove: Counter = field(default_factory=Counter)
    disagreements: list[Disagreement] = field(default_factory=list)

    def agreement(self, stage: str) -> float:
        return self.same[stage] / self.pages if self.pages else 1.0

    def table(self) -> str:
        rows = [f"{'filter':<20} {'agreement':>9} {'raycorpus-only':>15} {'datatrove-only':>15}"]
        for stage in (*STAGES, "chain"):
            rows.append(f"{stage:<20} {self.agreement(stage):>9.2%} {self.only_raycorpus[stage]:>15} "
                        f"{self.only_datatrove[stage]:>15}")
        return "\n".join(rows)


# -------------------------------------------------------------- the pages


def shared_texts(shared: Path) -> list[tuple[str, str]]:
    """(name, text) of every page both sides read (see the module doc); empty texts left out."""
    from raycorpus.cli.evaluate import load_readability, load_trafilatura_eval, shipped_extract_fn
    from raycorpus.cli.langid_eval import real_page_texts

    extract = shipped_extract_fn()
    out = [(f"trafilatura-eval/{name}", extract(html)) for name, html, _ in
           load_trafilatura_eval(shared / "extraction" / "trafilatura-eval")]
    out += [(f"readability/{name}", extract(html)) for name, html, _ in
            load_readability(shared / "extraction" / "readability")]
    out += [(f"warc/{i}", text) for i, text in enumerate(real_page_texts(shared / "warc"))]
    return [(name, text) for name, text in out if text.strip()]


def language_labels(texts: list[tuple[str, str]]) -> list[str]:
    """Each page's lid.176 label (the language whose FineWeb-2 settings it is compared with)."""
    from raycorpus.process.filters.langid import predict

    return [label for label, _ in predict(text for _, text in texts)]


# -------------------------------------------------------------- each side


def datatrove_kwargs(stage: str, settings: Any) -> dict[str, Any]:
    """The constructor arguments of datatrove's filter for raycorpus stage ``stage``'s ``settings``."""
    if stage == "gopher_repetition":
        return {"dup_line_frac": settings.dup_line_frac, "dup_para_frac": settings.dup_para_frac,
                "dup_line_char_frac": settings.dup_line_char_frac, "dup_para_char_frac": settings.dup_para_char_frac,
                "top_n_grams": tuple(sorted(settings.top_n_grams.items())),
                "dup_n_grams": tuple(sorted(settings.dup_n_grams.items()))}
    if stage == "gopher_quality":
        return {"min_doc_words": settings.min_words, "max_doc_words": settings.max_words,
                "min_avg_word_length": settings.min_avg_word_length,
                "max_avg_word_length": settings.max_avg_word_length,
                "max_symbol_word_ratio": settings.max_symbol_word_ratio,
                "max_bullet_lines_ratio": settings.max_bullet_lines_ratio,
                "max_ellipsis_lines_ratio": settings.max_ellipsis_lines_ratio,
                "max_non_alpha_words_ratio": settings.min_alpha_words_ratio, "min_stop_words": settings.min_stop_words,
                "stop_words": list(settings.stop_words)}
    if stage == "c4":
        return {"filter_no_terminal_punct": settings.terminal_punctuation,
                "min_num_sentences": settings.min_sentences, "min_words_per_line": settings.min_words_per_line,
                "max_word_length": settings.max_word_length or -1, "filter_lorem_ipsum": settings.drop_lorem_ipsum,
                "filter_javascript": settings.drop_javascript_lines, "filter_curly_bracket": settings.drop_curly_brace,
                "filter_policy": settings.drop_policy_lines}
    return {"line_punct_thr": settings.min_line_punct_ratio, "short_line_thr": settings.max_short_line_ratio,
            "short_line_length": settings.short_line_chars, "char_duplicates_ratio": settings.max_dup_line_char_ratio,
            "new_line_ratio": settings.max_newline_word_ratio}


def datatrove_filter(stage: str, settings: Any, lang: str = "en") -> Any:
    """datatrove's own filter for raycorpus stage ``stage`` with the same ``settings``."""
    from datatrove.pipeline.filters import (
        C4QualityFilter,
        FineWebQualityFilter,
        GopherQualityFilter,
        GopherRepetitionFilter,
    )

    cls = {"gopher_repetition": GopherRepetitionFilter, "gopher_quality": GopherQualityFilter,
           "c4": C4QualityFilter, "fineweb": FineWebQualityFilter}[stage]
    return cls(language=DATATROVE_LANG.get(lang, lang), **datatrove_kwargs(stage, settings))


def datatrove_filters(lang: str = "en", filters: FiltersConfig | None = None) -> dict[str, Any]:
    """datatrove's own filters with the settings raycorpus's stages have for ``lang`` (FineWeb's for English,
    FineWeb-2's for the others)."""
    settings = stage_settings(lang, filters)
    return {name: datatrove_filter(name, settings[name], lang) for name in STAGES}


def stage_settings(lang: str = "en", filters: FiltersConfig | None = None) -> dict[str, Any]:
    """Each compared stage's settings for documents labelled ``lang``."""
    filters = filters or FiltersConfig()
    registry = stages()
    out = {}
    for name in STAGES:
        cls, settings = registry[name], filters.section(name)
        if lang != "en" and filters.language_defaults == "fineweb2":
            settings = language_settings(cls, settings, lang) or settings
        out[name] = settings
    return out


def datatrove_decision(f: Any, text: str) -> tuple[str, str]:
    """("keep" or the reason, the text after it: C4 removes lines)."""
    from datatrove.data import Document as DtDocument

    doc = DtDocument(text=text, id="0")
    verdict = f.filter(doc)
    if verdict is True:
        return "keep", doc.text
    return (verdict[1] if isinstance(verdict, tuple) else "drop"), doc.text


def raycorpus_filters(lang: str = "en", filters: FiltersConfig | None = None) -> dict[str, Filter]:
    """raycorpus's stages with every signal computed, with ``lang``'s settings (FineWeb-2's, unless English)."""
    registry = stages()
    out = {}
    for name, settings in stage_settings(lang, filters).items():
        stage = registry[name].create(settings)
        stage.all_signals = True
        out[name] = stage
    return out


def raycorpus_decision(stage: Filter, text: str, lang: str) -> tuple[str, str, dict[str, Any]]:
    """("keep" or the reason, the text after it, the signals)."""
    view = language_view(TextView(text), lang) if lang != "en" else TextView(text)
    res = stage(Document(text, "", "", "", {"lang": lang}), view)
    return res.reason or "keep", res.text if res.text is not None else text, dict(res.signals)


# -------------------------------------------------------------- the comparison


def compare(texts: list[tuple[str, str]], lang: str = "en", filters: FiltersConfig | None = None) -> Parity:
    dt, rc = datatrove_filters(lang, filters), raycorpus_filters(lang, filters)
    parity = Parity(lang, len(texts))
    for name, text in texts:
        chain = {"dt": text, "rc": text, "dt_out": "keep", "rc_out": "keep"}
        for stage in STAGES:
            d, _ = datatrove_decision(dt[stage], text)
            r, _, signals = raycorpus_decision(rc[stage], text, lang)
            _count(parity, name, stage, d, r, signals)
            if chain["dt_out"] == "keep":  # the chain: each side's text goes on through its own stages
                chain["dt_out"], chain["dt"] = datatrove_decision(dt[stage], chain["dt"])
            if chain["rc_out"] == "keep":
                chain["rc_out"], chain["rc"], _ = raycorpus_decision(rc[stage], chain["rc"], lang)
        _count(parity, name, "chain", chain["dt_out"], chain["rc_out"], {})
    return parity


def _count(parity: Parity, page: str, stage: str, dt: str, rc: str, signals: dict[str, Any]) -> None:
    if (dt == "keep") == (rc == "keep"):
        parity.same[stage] += 1
        return
    (parity.only_raycorpus if dt == "keep" else parity.only_datatrove)[stage] += 1
    parity.disagreements.append(Disagreement(page, stage, dt, rc, signals))


def format_disagreements(parity: Parity) -> str:
    lines = []
    for d in parity.disagreements:
        shown = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in d.signals.items()}
        lines.append(f"{d.stage:<18} {d.page}: datatrove {d.datatrove}, raycorpus {d.raycorpus}  {shown}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shared", default="../shared/data", help="the shared data folder")
    ap.add_argument("--lang", action="append", help="languages (default: en); FineWeb-2's settings for others")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    texts = shared_texts(Path(args.shared))
    labels = None
    results = {}
    for lang in args.lang or ["en"]:
        if lang != "en" and labels is None:
            labels = language_labels(texts)
        parity = compare(texts if lang == "en" else [t for t, label in zip(texts, labels, strict=True)
                                                     if label == lang], lang)
        results[lang] = {s: round(parity.agreement(s), 4) for s in (*STAGES, "chain")}
        if not args.json:
            print(f"== {lang}: {parity.pages} pages\n{parity.table()}\n{format_disagreements(parity)}\n")
    if args.json:
        print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
