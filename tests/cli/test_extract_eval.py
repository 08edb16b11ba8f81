"""``raycorpus eval``'s extraction rules section: the ablation has a row per rule, the time ratio is measured
side by side with bare resiliparse."""

from raycorpus.cli.evaluate import format_eval
from raycorpus.cli.extract_eval import ablation, format_rules_report, rule_switches, time_ratio
from raycorpus.process.extract import RULES_OFF_AS_BEFORE, ExtractConfig
from tests.process.test_extract import EXTRACTION, need


def test_every_rule_has_a_switch_and_off_means_off():
    switches = rule_switches(ExtractConfig())
    assert set(switches) == {"skip_selectors", "rescue_content", "clean_lines", "trim_tail", "trim_head",
                             "drop_calls_to_action", "cut_after_article", "cut_tail", "fallback"}
    for update in switches.values():
        ExtractConfig().model_copy(update=update)  # each one a valid config
    everything_off = ExtractConfig(**RULES_OFF_AS_BEFORE, skip_selectors=(), rescue_content=False,
                                   clean_lines=False, trim_tail=False)
    assert rule_switches(everything_off) == {}


def test_ablation_and_time_on_a_slice():
    root = need(EXTRACTION / "trafilatura-eval").parent
    rows = ablation(root, every=40)
    assert set(rows) == {"all rules", *(f"-{k}" for k in rule_switches(ExtractConfig()))}
    assert all(set(row) == {"trafilatura-eval", "half A", "half B", "readability"} for row in rows.values())
    t = time_ratio(root, repeats=1, every=40)
    assert t["pages"] == len(range(0, 851, 40)) + len(range(0, 130, 40)) and t["ratio"] > 0
    text = format_rules_report({"ablation": rows, "time": t})
    assert "-trim_head" in text and "x (median of 1 runs" in text
    assert format_eval({"extraction-rules": {"ablation": rows, "time": t}}).endswith(text.splitlines()[-1])


def test_trafilatura_eval_has_two_fixed_halves_by_page():
    """Half A tunes a new extraction rule, half B (and readability) checks it: each page's half is fixed by its
    file name and a seed, the halves split the pages about evenly, and their counts add up to the whole set's."""
    import json

    from raycorpus.cli.evaluate import HALVES, eval_trafilatura, shipped_extract_fn, trafilatura_half

    root = need(EXTRACTION / "trafilatura-eval")
    files = sorted(item["file"] for item in json.loads((root / "evaldata_subset.json").read_text()).values())
    halves = [trafilatura_half(f) for f in files]
    assert halves == [trafilatura_half(f) for f in files] and set(halves) == set(HALVES)
    assert 0.45 < halves.count("A") / len(files) < 0.55
    assert halves != [trafilatura_half(f, seed=28) for f in files]  # the seed decides
    res = eval_trafilatura(root, shipped_extract_fn(), every=20)
    a, b = res["halves"]["A"], res["halves"]["B"]
    assert a["pages"] + b["pages"] == res["pages"] and a["pages"] and b["pages"]
    for k in ("tp", "fp", "fn", "tn"):
        assert a[k] + b[k] == res[k]
    subset = files[::20]
    assert a["pages"] == sum(trafilatura_half(f) == "A" for f in subset)  # a page keeps its half in a subset
