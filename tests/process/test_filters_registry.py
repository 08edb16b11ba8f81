"""The stage registry and filters.chain: a stage defined here (one class and one line) is configured,
validated and run like a built-in one; chain order, validation errors, shared resources, fingerprints."""

import json
from collections import Counter

import pytest
from pydantic import Field

from raycorpus import counts as ck
from raycorpus.config import ConfigError, config_from_dict
from raycorpus.process.document import Document
from raycorpus.process.filters import DEFAULT_CHAIN, Chain, Filter, FilterResult, StageSettings, register
from raycorpus.process.filters.decontam import DecontamIndex
from raycorpus.process.filters.registry import stages
from raycorpus.process.pipeline import WarcProcessor

BASE = {"input": {"manifest": "m"}, "output": {"path": "o"}, "tokenizer": {"path": "t"}}


# -- a new stage: its settings, one class, one registration line -----------------------------------


class MaxLineLengthConfig(StageSettings):
    max_chars: int = Field(80, ge=1, description="drop documents with a longer line")


@register
class MaxLineLengthFilter(Filter):
    """Drops documents with a line longer than ``max_chars`` characters."""

    name = "max_line_length"
    settings = MaxLineLengthConfig

    def __init__(self, cfg: MaxLineLengthConfig):
        self.max_chars = cfg.max_chars

    def __call__(self, doc, view):
        longest = max(map(len, view.lines), default=0)
        return FilterResult(reason="line_too_long" if longest > self.max_chars else None,
                            signals={"max_line_length.longest": longest})


class NoQueryConfig(StageSettings):
    pass


@register
class NoQueryFilter(Filter):
    """A URL-input stage: drops URLs with a query string, before extraction."""

    name = "no_query"
    settings = NoQueryConfig
    needs = "url"

    def __init__(self, cfg: NoQueryConfig):
        pass

    def __call__(self, url):
        return "query" if "?" in url else None


# --------------------------------------------------------------------------------------------------


def filters(**section) -> dict:
    return config_from_dict({**BASE, "filters": section}).filters


def doc(text: str) -> Document:
    return Document(text=text, url="http://x.test/", record_id="<urn:uuid:1>", date="")


LONG_AND_SHORT = "x" * 120 + "\nshort line"  # a long line, and far too few words for gopher_quality


def test_a_registered_stage_is_configured_and_runs_in_the_chain():
    cfg = filters(chain=["max_line_length"], max_line_length={"max_chars": 100})
    assert cfg.max_line_length.max_chars == 100 and cfg.section("max_line_length").max_chars == 100
    chain = Chain(cfg)
    assert chain.names == ["max_line_length"]
    counts = Counter()
    assert chain(doc(LONG_AND_SHORT), counts) == "max_line_length:line_too_long"
    assert chain(doc("a\nb"), counts) is None
    assert counts[ck.drop("max_line_length", "line_too_long")] == 1
    assert ck.time_in("max_line_length") in counts


def test_a_chain_stage_without_a_section_gets_its_defaults():
    cfg = filters(chain=["max_line_length"])
    assert cfg.max_line_length == MaxLineLengthConfig()
    assert Chain(cfg)(doc("y" * 81), Counter()) == "max_line_length:line_too_long"


def test_the_chain_order_decides_which_reason_drops():
    gopher_first = filters(chain=["gopher_quality", "max_line_length"])
    mine_first = filters(chain=["max_line_length", "gopher_quality"])
    assert Chain(gopher_first).names == ["gopher_quality", "max_line_length"]
    assert Chain(gopher_first)(doc(LONG_AND_SHORT), Counter()) == "gopher_quality:too_few_words"
    assert Chain(mine_first)(doc(LONG_AND_SHORT), Counter()) == "max_line_length:line_too_long"


def test_tag_mode_records_the_new_stage_in_would_drop():
    counts = Counter()
    cfg = filters(mode="tag", chain=["max_line_length", "gopher_quality"])
    d = doc(LONG_AND_SHORT)
    assert Chain(cfg)(d, counts) is None
    assert d.metadata["would_drop"] == ["max_line_length:line_too_long", "gopher_quality:too_few_words"]
    assert d.metadata["max_line_length.longest"] == 120
    assert counts[ck.tag("max_line_length", "line_too_long")] == 1
    assert not ck.of_kind(counts, ck.Kind.DROP)


def test_tag_mode_asks_every_stage_for_all_signals():
    assert all(s.all_signals for s, _ in Chain(filters(mode="tag", chain=["gopher_quality", "c4"])).stages)
    assert not any(s.all_signals for s, _ in Chain(filters(chain=["gopher_quality", "c4"])).stages)


def test_disabled_and_language_limited_stages():
    cfg = filters(chain=["max_line_length", "gopher_quality"], max_line_length={"enabled": False})
    assert Chain(cfg).names == ["gopher_quality"]
    cfg = filters(chain=["max_line_length"], max_line_length={"languages": ["de"]})
    d = doc(LONG_AND_SHORT)
    assert Chain(cfg)(d, Counter()) is None  # no "de" label: the stage does not apply
    d.metadata["lang"] = "de"
    assert Chain(cfg)(d, Counter()) == "max_line_length:line_too_long"


def test_url_stages_run_before_extraction_in_chain_order():
    counts = Counter()
    chain = Chain(filters(chain=["no_query", "url", "max_line_length"]))
    assert chain.names == ["no_query", "url", "max_line_length"]
    assert [s.name for s in chain.url_stages] == ["no_query", "url"]
    assert chain.check_url("http://x.test/?a=1", counts) == "no_query:query"
    assert chain.check_url("http://x.test/a", counts) is None
    assert counts[ck.drop("no_query", "query")] == 1
    tagged = Counter()
    assert Chain(filters(mode="tag", chain=["no_query"])).check_url("http://x.test/?a=1", tagged) is None
    assert tagged[ck.tag("no_query", "query")] == 1


def test_a_chain_without_the_url_stage_filters_no_url():
    blocked = "http://x.test/porn"
    assert Chain(filters(chain=["url"])).check_url(blocked, Counter()) == "url:banned_word"
    assert Chain(filters(chain=["gopher_quality"])).check_url(blocked, Counter()) is None


@pytest.mark.parametrize("chain, expected", [
    (["url", "nope"], "filters.chain.1: unknown stage 'nope'; registered stages: "),
    (["url", "c4", "url"], "filters.chain.2: stage 'url' is listed twice"),
    (["langid", "url"], "filters.chain.1: stage 'url' reads the record's URL before extraction, so it must come "
     "before every stage that reads the text (it is after 'langid')"),
    (["max_line_length", "no_query"], "filters.chain.1: stage 'no_query' reads the record's URL"),
    ("url", "filters.chain: Input should be a valid list"),
])
def test_chain_errors_name_filters_chain(chain, expected):
    with pytest.raises(ConfigError) as e:
        filters(chain=chain)
    assert expected in str(e.value)


@pytest.mark.parametrize("section, expected", [
    ({"max_line_length": {"max_chars": 0}}, "filters.max_line_length.max_chars: Input should be greater than or "
     "equal to 1"),
    ({"max_line_length": {"max_char": 5}}, "filters.max_line_length.max_char: unknown field"),
    ({"nonesuch": {}}, "filters.nonesuch: unknown stage section 'nonesuch' (not a registered stage; registered "
     "stages: "),
    ({"max_line_length": {}}, "filters.max_line_length: enabled but not in filters.chain"),
    ({"chain": ["url"], "pii": {"email": False}}, "filters.pii: enabled but not in filters.chain"),
])
def test_section_errors_name_the_field(section, expected):
    with pytest.raises(ConfigError) as e:
        filters(**section)
    assert expected in str(e.value)


def test_a_section_switched_off_need_not_be_in_the_chain():
    cfg = filters(max_line_length={"enabled": False, "max_chars": 3})
    assert cfg.stage_names == DEFAULT_CHAIN and cfg.max_line_length.max_chars == 3


def test_builtin_stages_keep_their_sections_and_counter_names():
    registry = stages()
    assert set(DEFAULT_CHAIN) <= set(registry)
    assert {n: registry[n].label() for n in DEFAULT_CHAIN} == {n: n for n in DEFAULT_CHAIN} | {"langid": "lang"}
    assert [n for n in DEFAULT_CHAIN if registry[n].needs == "url"] == ["url"]
    cfg = filters()
    assert cfg.stage_names == DEFAULT_CHAIN and cfg.langid.keep == ["en"] and not cfg.decontam.enabled
    assert [cls.name for cls, _ in cfg.enabled_stages()] == [n for n in DEFAULT_CHAIN
                                                              if n not in ("model_quality", "decontam")]


def test_a_taken_name_cannot_be_registered_again():
    class Other(MaxLineLengthFilter):
        pass

    with pytest.raises(ValueError, match="taken by"):
        register(Other)
    assert register(MaxLineLengthFilter) is MaxLineLengthFilter  # the same class again (a module reloaded)


def test_fingerprint_of_the_default_chain_is_that_of_no_chain():
    plain = config_from_dict(BASE)
    explicit = config_from_dict({**BASE, "filters": {"chain": list(DEFAULT_CHAIN)}})
    reordered = config_from_dict({**BASE, "filters": {"chain": ["url", "gopher_quality", "langid"]}})
    mine = config_from_dict({**BASE, "filters": {"chain": ["max_line_length"]}})
    longer = config_from_dict({**BASE, "filters": {"chain": ["max_line_length"], "max_line_length": {"max_chars": 9}}})
    assert plain.fingerprint() == explicit.fingerprint()
    assert len({plain.fingerprint(), reordered.fingerprint(), mine.fingerprint(), longer.fingerprint()}) == 4
    assert json.loads(json.dumps(longer.model_dump(mode="json")))["filters"]["max_line_length"]["max_chars"] == 9


# -- shared resources --------------------------------------------------------------------------------


def decontam_config(tmp_path, **filters_section):
    bench = tmp_path / "bench.jsonl"
    bench.write_text(json.dumps({"q": "the quick brown fox jumps over the lazy dog near the river bank today"}) + "\n")
    return config_from_dict({**BASE, "filters": {
        "decontam": {"enabled": True, "benchmarks": [{"name": "b", "path": str(bench), "fields": ["q"]}]},
        **filters_section}})


def test_shared_resources_are_built_once_and_handed_to_each_chain(tmp_path):
    cfg = decontam_config(tmp_path, chain=["decontam"])
    resources = Chain.shared_resources(cfg.filters)
    assert list(resources) == ["decontam"] and isinstance(resources["decontam"], DecontamIndex)
    a, b = Chain(cfg.filters, resources), WarcProcessor(cfg, resources=resources).chain
    assert a.stages[0][0].index is b.stages[0][0].index is resources["decontam"]
    text = "A page. The quick brown fox jumps over the lazy dog near the river bank today, it said."
    assert a(doc(text), Counter()) == "decontam:b"
    assert Chain(cfg.filters)(doc(text), Counter()) == "decontam:b"  # without resources: built by the chain
    assert Chain.shared_resources(filters(chain=["gopher_quality"])) == {}
    assert Chain.shared_resources(decontam_config(tmp_path, chain=["c4"], decontam={"enabled": False}).filters) == {}
