"""FineWeb-2's per-language defaults (``filters.language_defaults``): the shipped table, thresholds
per language on failing cases, English untouched, and real pages in zh/ja/ru/de before and after."""

import gzip
from collections import Counter

import pytest

from raycorpus.config import config_from_dict
from raycorpus.ingest.warc import iter_html_records
from raycorpus.process.document import Document
from raycorpus.process.extract import Extractor
from raycorpus.process.filters import Chain
from raycorpus.process.filters.langtable import for_label, source, table
from raycorpus.process.filters.langtable_build import DEFAULT_COMMIT, OUT, build, dumps, model_labels
from raycorpus.process.filters.resources import resolve_resource
from raycorpus.process.filters.settings import FiltersConfig
from tests.support.paths import SHARED, SHARED_WARC, need_shared

BASE = {"input": {"manifest": "m"}, "output": {"path": "o"}, "tokenizer": {"path": "t"}}
LANGS = ("zh", "ja", "ru", "de")
# a German paragraph: German stop words, none of the English ones
GERMAN = ("Der Verein wurde im Jahr 1950 in der Stadt gegründet und hat seitdem viele Mitglieder. "
          "Die Mannschaft spielt in der Landesliga, und die Jugend trainiert zweimal in der Woche mit dem Trainer. ")


def chain(defaults: str, **sections) -> Chain:
    """A chain of the given stages (the documents come labelled, as the language ID stage leaves them)."""
    return Chain(FiltersConfig.model_validate({"language_defaults": defaults, **sections}))


def run(ch: Chain, text: str, lang: str | None = None) -> tuple[str | None, Document]:
    doc = Document(text=text, url="http://x.test/", record_id="", date="", metadata={"lang": lang} if lang else {})
    return ch(doc, Counter()), doc


def test_table_loads_with_attribution_and_entries_for_the_big_languages():
    for lang in (*LANGS, "th", "ar", "ko"):
        entry = for_label(lang)
        assert entry is not None and entry.stop_words and 0 < entry.dup_line_frac < 1, lang
    assert for_label("zh").name == "cmn_Hani" and "的" in for_label("zh").stop_words
    assert for_label("en") is None  # FineWeb-2 has no eng_Latn: English keeps the stages' values
    assert source()["license"].startswith("Apache-2.0") and len(source()["commit"]) == 40
    assert "Apache License" in resolve_resource("package:fineweb2_LICENSE.txt").read_text()
    assert len(table()) >= 20


def test_the_committed_table_is_what_the_generator_builds():
    configs = need_shared(SHARED / "data" / "fineweb2" / "configs")
    assert dumps(build(configs, model_labels(), DEFAULT_COMMIT)) == OUT.read_text(encoding="utf-8")


def test_german_stop_words_and_the_english_ones_fail_the_other_language():
    text = GERMAN * 4
    english = ["gopher_quality"]
    none = chain("none", chain=english)
    fw2 = chain("fineweb2", chain=english)
    assert run(none, text, "de")[0] == "gopher_quality:stop_words"  # English stop words in a German page
    assert run(fw2, text, "de")[0] is None
    # German-looking, no German stop word; one full stop per six words (a mark is a token: the alpha ratio)
    words = " ".join(f"Wort{i} Satz{i} Teil{i} Stück{i} Haus{i} Weg{i}." for i in range(20))
    assert run(fw2, words, "de")[0] == "gopher_quality:stop_words[de]"
    assert run(fw2, words, "en")[0] == run(none, words, "en")[0] == "gopher_quality:stop_words"


def test_a_value_written_in_the_config_wins_over_the_table():
    fw2 = chain("fineweb2", chain=["gopher_quality"], gopher_quality={"stop_words": ["the", "and", "of"]})
    assert run(fw2, GERMAN * 4, "de")[0] == "gopher_quality:stop_words[de]"  # de's word lengths, the config's words
    strict = chain("fineweb2", chain=["fineweb"], fineweb={"min_line_punct_ratio": 0.99})
    lines = "\n".join(["Ein Satz ohne Punkt am Ende"] * 3 + ["Und einer mit Punkt am Ende."] * 3)
    assert run(strict, lines, "de")[0] == "fineweb:line_punct_ratio[de]"


def test_chinese_words_are_cut_so_word_rules_apply():
    text = ("益阳还引进各大电商等入驻村级便民服务点\uff0c构建互联网农产品直销基地模式\uff0c"
            "为当地优质特产插上飞往全国的翅膀。"
            "安化黑茶、沅江芦笋、南县小龙虾等特色产品颇具网络口碑\uff0c桃江竹凉席销售额占全国线上销售额以上。\n") * 2
    none, fw2 = chain("none", chain=["gopher_quality"]), chain("fineweb2", chain=["gopher_quality"])
    assert run(none, text, "zh")[0] == "gopher_quality:too_few_words"  # four clauses = a handful of "words"
    assert run(fw2, text, "zh")[0] is None
    assert run(fw2, text[:20], "zh")[0] == "gopher_quality:too_few_words[zh]"


def test_which_languages_get_script_aware_words():
    from raycorpus.process.filters.multilingual import script_aware

    assert all(script_aware(lang) for lang in ("zh", "ja", "th", "hi", "ar"))
    assert not any(script_aware(lang) for lang in ("en", "de", "ru", "ko", "xx"))


def test_tag_mode_records_the_language_rule():
    ch = Chain(FiltersConfig.model_validate({"mode": "tag", "chain": ["gopher_quality"]}))
    words = " ".join(f"Wort{i} Satz{i} Teil{i} Stück{i} Haus{i} Weg{i}." for i in range(20))
    reason, doc = run(ch, words, "de")
    assert reason is None and "gopher_quality:stop_words[de]" in doc.metadata["would_drop"]


def cc_pages() -> list[str]:
    """Extracted text of the HTML pages of the Common Crawl excerpt and the ClueWeb09-ja sample."""
    extract = Extractor(config_from_dict(BASE).extract)
    texts = []
    for name in ("warcfile.warc.gz", "clueweb-quirk.warc.gz"):
        with open(need_shared(SHARED_WARC / "resiliparse" / "tests" / "data" / name), "rb") as f:
            texts += [t for t, _ in map(extract, iter_html_records(f, Counter(), 8 << 20)) if t]
    return texts


def article_pages() -> list[str]:
    """Main text of every third of trafilatura's evaluation pages (news and articles, mostly German)."""
    from resiliparse.extract.html2text import extract_plain_text

    pages = sorted(need_shared(SHARED / "data" / "extraction" / "trafilatura-eval").glob("*/*.html.gz"))[::3]
    texts = (extract_plain_text(gzip.decompress(p.read_bytes()).decode("utf-8", "replace"), main_content=True,
                                preserve_formatting=True) for p in pages)
    return [t for t in texts if len(t) > 200]


def kept_by_language(texts: list[str], defaults: str) -> tuple[Counter, Counter, Counter]:
    """(kept, total, drop reasons) per language label, langid keep: null."""
    ch = Chain(config_from_dict({**BASE, "filters": {"langid": {"keep": None}, "language_defaults": defaults}}).filters)
    kept, total, reasons = Counter(), Counter(), Counter()
    for text in texts:
        reason, doc = run(ch, text)
        lang = doc.metadata.get("lang")
        total[lang] += 1
        kept[lang] += reason is None
        if reason:
            reasons[(lang, reason)] += 1
    return kept, total, reasons


@pytest.mark.parametrize("pages", [cc_pages, article_pages], ids=["cc-excerpt", "articles"])
def test_real_pages_keep_more_in_their_languages_and_drops_name_the_language(pages):
    texts = pages()
    before, total, _ = kept_by_language(texts, "none")
    after, total2, reasons = kept_by_language(texts, "fineweb2")
    assert total == total2
    assert all(after[lang] >= before[lang] for lang in LANGS)
    assert after["en"] == before["en"]
    assert sum(after[lang] for lang in LANGS) > sum(before[lang] for lang in LANGS)
    per_language = ("gopher_quality", "gopher_repetition", "fineweb")
    named = [(lang, r) for (lang, r) in reasons if lang in LANGS and r.split(":")[0] in per_language]
    assert named and all(r.endswith(f"[{lang}]") for lang, r in named)
    if pages is article_pages:  # German news articles: English stop words dropped most of them
        assert after["de"] >= 3 * before["de"] and after["de"] > total["de"] // 2
