"""``raycorpus report A --against B``: two outputs side by side.

Per outcome (kept, each drop reason, each kind of duplicate) and per language, the documents of each and the
delta. Both outputs sample by the same hash of the record id (:func:`~raycorpus.process.profile.sample_key`),
so their samples of the documents that passed the filters are coordinated: below the smaller of the two
samples' largest keys, a document kept by one output is in the other's sample exactly when the other kept
it too. That gives, exactly, sampled documents kept by one output and not the other, and the other's reason
when it sampled that document too.
"""

from __future__ import annotations

from collections import Counter

from raycorpus.output.report_state import KEPT, ReportState
from raycorpus.process.profile import NO_BOUND, PASSED, SampleDoc
from raycorpus.report.sections import NO_LANGUAGE, figure
from raycorpus.report.view import OutputView

SHOWN = 50  # documents listed each way


def outcomes(view: OutputView) -> Counter:
    """Documents per outcome: kept, each drop reason (tag mode: the first would-drop one), each duplicate kind."""
    if view.report is not None and view.report.reasons:
        return Counter(view.report.reasons)
    s = view.summary
    return Counter({KEPT: s.docs.kept, **s.docs.dropped})


def kept_by_language(report: ReportState | None) -> Counter:
    if report is None:
        return Counter()
    return Counter({lang or NO_LANGUAGE: int(v[0]) for (lang, outcome), v in report.langs.items() if outcome == KEPT})


def compare(a: OutputView, b: OutputView) -> dict:
    oa, ob = outcomes(a), outcomes(b)
    reasons = sorted(set(oa) | set(ob), key=lambda r: (r != KEPT, -(oa[r] + ob[r]), r))
    by_reason = [{"reason": r, "this": oa[r], "other": ob[r], "delta": ob[r] - oa[r]} for r in reasons]
    la, lb = kept_by_language(a.report), kept_by_language(b.report)
    langs = sorted(set(la) | set(lb), key=lambda x: (-(la[x] + lb[x]), x))
    by_lang = [{"lang": x, "this": la[x], "other": lb[x], "delta": lb[x] - la[x]} for x in langs]
    shown = [row for row in by_reason if row["delta"]][:30]
    fig = figure([{"type": "bar", "orientation": "h", "y": [row["reason"] for row in shown][::-1],
                   "x": [row["delta"] for row in shown][::-1],
                   "marker": {"color": ["#4c9a5b" if row["delta"] > 0 else "#c8553d" for row in shown][::-1]}}],
                 title={"text": "Documents per outcome: other minus this"}, margin={"l": 220},
                 height=max(260, 40 + 22 * len(shown)))
    only_a, only_b = kept_by_one(a.report, b.report), kept_by_one(b.report, a.report)
    return {"this": a.url, "other": b.url, "by_reason": by_reason, "by_language": by_lang, "figure": fig,
            "kept_only_here": only_a, "kept_only_there": only_b,
            "sampled": a.report is not None and b.report is not None}


def kept_by_one(mine: ReportState | None, theirs: ReportState | None) -> list[dict]:
    """Sampled documents ``mine`` kept and ``theirs`` did not (exact below both samples' bounds), with what
    ``theirs`` made of each when it sampled it too."""
    if mine is None or theirs is None:
        return []
    bound = min(_bound(mine), _bound(theirs))
    kept_there = {_id(s) for s in theirs.samples.get(PASSED, []) if s.label == KEPT}
    fate = {_id(s): s.label or s.pool for docs in theirs.samples.values() for s in docs}
    out = []
    for s in mine.samples.get(PASSED, []):
        if s.label != KEPT or s.key > bound or _id(s) in kept_there:
            continue
        out.append({**s.to_json(), "key": str(s.key), "lang": s.lang or NO_LANGUAGE, "reason": KEPT,
                    "there": fate.get(_id(s), "dropped (reason not in its sample)")})
        if len(out) == SHOWN:
            break
    return out


def _bound(report: ReportState) -> int:
    passed = report.samples.get(PASSED, [])
    return passed[-1].key if len(passed) >= report.samples_passed else NO_BOUND


def _id(s: SampleDoc) -> tuple[str, str]:
    return s.record_id, s.url

