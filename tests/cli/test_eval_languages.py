"""``raycorpus eval``'s multilingual section, on lingua's real sentences made into pages."""

import json

from raycorpus.cli.eval_languages import eval_language_defaults, format_language_defaults
from tests.support.paths import SHARED, need_shared

LINGUA = SHARED / "data" / "langid" / "sample_20_per_lang.jsonl"


def test_section_reports_kept_per_language_word_lengths_and_cost():
    path = need_shared(LINGUA)
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    pages = ["\n\n".join(r["text"] for r in rows if r["lang"] == lang) for lang in ("de", "ru", "en")]
    r = eval_language_defaults(pages, path, repeats=1)
    assert r["pages"] == 3 and set(r["kept"]) == {"de", "ru", "en"}
    assert r["kept"]["en"]["none"] == r["kept"]["en"]["fineweb2"]  # English has no FineWeb-2 entry
    w = r["word_length"]["zh"]
    assert w["fineweb2_bounds"][0] <= w["mean_script_aware"] <= w["fineweb2_bounds"][1] < w["mean_word_re"]
    text = "\n".join(format_language_defaults(r))
    assert "kept/total on 3 pages" in text and "words zh" in text and "ns/char" in text
