"""``python -m raycorpus.cli.parity``: raycorpus's FineWeb filters against datatrove's own filter classes.

Both sides get the same texts: the shipped extractor's text of every page of ``../shared/data/extraction``
(trafilatura-eval and readability) and of every HTML response in the WARCs of ``../shared/data/warc``. Each
filter sees every page with one language's settings (English by default: FineWeb's), and then the chain runs
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


# -------------------------------------------------------------- each side


def datatrove_filters(lang: str = "en", settings: dict[str, dict] | None = None) -> dict[str, Any]:
    """datatrove's own filters as FineWeb ran them (C4 keeps lines without terminal punctuation), with
    ``settings`` (per stage: constructor arguments, e.g. FineWeb-2's for a language)."""
    from datatrove.pipeline.filters import (
        C4QualityFilter,
        FineWebQualityFilter,
        GopherQualityFilter,
        GopherRepetitionFilter,
    )

    settings = settings or {}
    dt_lang = DATATROVE_LANG.get(lang, lang)
    return {
        "gopher_repetition": GopherRepetitionFilter(language=dt_lang, **settings.get("gopher_repetition", {})),
        "gopher_quality": GopherQualityFilter(language=dt_lang, **settings.get("gopher_quality", {})),
        "c4": C4QualityFilter(filter_no_terminal_punct=False, language=dt_lang, **settings.get("c4", {})),
        "fineweb": FineWebQualityFilter(language=dt_lang, **settings.get("fineweb", {})),
    }


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
    filters = filters or FiltersConfig()
    registry = stages()
    out = {}
    for name in STAGES:
        cls, settings = registry[name], filters.section(name)
        if lang != "en" and filters.language_defaults == "fineweb2":
            settings = language_settings(cls, settings, lang) or settings
        stage = cls.create(settings)
        stage.all_signals = True
        out[name] = stage
    return out


def raycorpus_decision(stage: Filter, text: str, lang: str) -> tuple[str, str, dict[str, Any]]:
    """("keep" or the reason, the text after it, the signals)."""
    view = language_view(TextView(text), lang) if lang != "en" else TextView(text)
    res = stage(Document(text, "", "", "", {"lang": lang}), view)
    return res.reason or "keep", res.text if res.text is not None else text, dict(res.signals)


# -------------------------------------------------------------- the comparison


def compare(texts: list[tuple[str, str]], lang: str = "en", dt_settings: dict[str, dict] | None = None,
            filters: FiltersConfig | None = None) -> Parity:
    dt, rc = datatrove_filters(lang, dt_settings), raycorpus_filters(lang, filters)
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
    results = {}
    for lang in args.lang or ["en"]:
        parity = compare(texts, lang)
        results[lang] = {s: round(parity.agreement(s), 4) for s in (*STAGES, "chain")}
        if not args.json:
            print(f"== {lang}: {parity.pages} pages\n{parity.table()}\n{format_disagreements(parity)}\n")
    if args.json:
        print(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
