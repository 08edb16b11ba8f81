"""Script-aware words for languages written without spaces, on real sentences (lingua's test data)."""

import json
import statistics

import pytest

from raycorpus.process.filters.base import WORD_RE, TextView
from raycorpus.process.filters.langtable import for_label
from raycorpus.process.filters.words import count_words, script_tokens
from tests.support.paths import SHARED, need_shared

LINGUA = SHARED / "data" / "langid" / "sample_20_per_lang.jsonl"


def sentences(lang: str) -> list[str]:
    rows = [json.loads(line) for line in need_shared(LINGUA).read_text(encoding="utf-8").splitlines()]
    return [r["text"] for r in rows if r["lang"] == lang]


@pytest.mark.parametrize("lang", ["zh", "ja", "th"])
def test_script_aware_words_fit_fineweb2_word_length_bounds_on_real_text(lang):
    texts = sentences(lang)
    plain = [w for t in texts for w in TextView(t).words]
    aware = [w for t in texts for w in TextView(t, script_aware=True).words]
    entry = for_label(lang)
    mean = statistics.mean(map(len, aware))
    assert entry.min_avg_word_length <= mean <= entry.max_avg_word_length, mean
    assert len(aware) > 1.5 * len(plain)  # clauses (zh, ja) or mark-broken pieces (th) become words
    if lang != "th":  # WORD_RE's "words" are whole clauses: far outside FineWeb-2's bounds
        assert statistics.mean(map(len, plain)) > entry.max_avg_word_length


def test_indic_vowel_signs_stay_in_their_word():
    # WORD_RE cuts Hindi words at every vowel sign (Python's \w does not match them): mean < FineWeb-2's minimum
    texts = sentences("hi")
    entry = for_label("hi")
    plain = [w for t in texts for w in TextView(t).words]
    aware = [w for t in texts for w in TextView(t, script_aware=True).words]
    assert statistics.mean(map(len, plain)) < entry.min_avg_word_length
    assert entry.min_avg_word_length <= statistics.mean(map(len, aware)) <= entry.max_avg_word_length
    assert script_tokens("यह बहुत कठिन कार्य था") == ["यह", "बहुत", "कठिन", "कार्य", "था"]


@pytest.mark.parametrize("lang", ["en", "de", "ru"])
def test_script_tokens_are_word_re_tokens_for_plain_scripts(lang):
    assert all(script_tokens(t) == WORD_RE.findall(t) for t in sentences(lang))


def test_han_and_kana_runs_are_cut_in_pairs_latin_words_stay_whole():
    assert script_tokens("我的车很快。Tanya Chua 1975年") == ["我的", "车很", "快", "。", "Tanya", "Chua", "1975", "年"]
    assert script_tokens("ひらがなカタカナ") == ["ひら", "がな", "カタ", "カナ"]


def test_thai_marks_stay_with_their_letter():
    # WORD_RE breaks Thai at every vowel sign and tone mark (Python's \w does not match them)
    assert WORD_RE.findall("ที่และ") == ["ท", "\u0e35", "\u0e48", "และ"]
    assert script_tokens("ที่และของ") == ["ที่แ", "ละ", "ขอ", "ง"]  # two clusters a word, marks kept


def test_space_separated_lines_count_as_before():
    line = "Bei dieser Art Urlaub haben Sie mehr vom Leben"
    assert count_words(line) == len(line.split()) == 9
    assert count_words("今天天气很好") == 3


def test_view_words_are_the_tokens_with_a_letter_or_digit():
    """``TextView.words`` keeps a token of two or more characters, or one alphanumeric character (it tested
    both ends of every token before): the same words on the failing cases ('_', lone marks, one letter or
    digit, joiners) and on real sentences in 75 languages."""

    def first_definition(tokens):
        return [t for t in tokens if t[0].isalnum() or t[-1].isalnum() or len(t) > 1]

    def regex_tokens(v: TextView) -> list[str]:  # what ``words`` is cut from (``tokens`` are datatrove's)
        return script_tokens(v.text) if v.script_aware else WORD_RE.findall(v.text)

    view = TextView("a _ __ - -- 1 ' x-y don't ½ ² … é 中文")
    assert view.words == ["a", "__", "1", "x-y", "don't", "½", "²", "é", "中文"] == first_definition(regex_tokens(view))
    for line in need_shared(LINGUA).read_text(encoding="utf-8").splitlines():
        for aware in (False, True):
            v = TextView(json.loads(line)["text"], script_aware=aware)
            assert v.words == first_definition(regex_tokens(v))
