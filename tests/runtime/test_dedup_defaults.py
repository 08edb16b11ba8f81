"""The near-dedup defaults chosen on the tuning halves (2-bit OPH samples, verify_margin 0.0125) change the output:
an output built with the parameters of before (1-bit samples, margin 0.005) refuses to resume with the new defaults,
naming the changed settings, and resumes with the old values written in its config."""

from __future__ import annotations

import json

import pytest

from raycorpus.ingest.storage import Storage
from raycorpus.output.ledger import Ledger, LedgerError
from raycorpus.process.dedup.prior import dedup_changes, dedup_decision, dedup_keys
from raycorpus.process.dedup.settings import DedupConfig
from raycorpus.runtime.driver import check_run_identity
from tests.support.corpus import make_config, run

BEFORE = {"oph_bits": 1, "verify_margin": 0.005}  # the defaults before oph_bits


def test_the_refusal_names_the_changed_dedup_settings(tmp_path):
    old_cfg, new_cfg = DedupConfig(**BEFORE), DedupConfig()
    assert "oph_bits" not in dedup_keys(old_cfg)  # recorded as an output of before recorded it
    old_run = {"config_fingerprint": "a", "manifest": "m", "warcs": 8, "dedup_keys": dedup_keys(old_cfg)}
    new_run = {**old_run, "config_fingerprint": "b", "dedup_keys": dedup_keys(new_cfg),
               "dedup_decision": dedup_decision(new_cfg)}
    ledger = Ledger(Storage(), str(tmp_path / "before"))
    check_run_identity(ledger, old_run)  # an output started before: no dedup_decision in its run.json
    with pytest.raises(LedgerError, match=r"different config_fingerprint \('a', now 'b'\): its dedup settings differ "
                                          r"\(dedup.oph_bits 1, now 2\); use a new output path"):
        check_run_identity(ledger, new_run)
    recorded = Ledger(Storage(), str(tmp_path / "since"))  # one started since records the margin too
    check_run_identity(recorded, {**old_run, "dedup_decision": dedup_decision(old_cfg)})
    with pytest.raises(LedgerError, match=r"dedup.oph_bits 1, now 2; dedup.verify_margin 0.005, now 0.0125\)"):
        check_run_identity(recorded, new_run)
    assert dedup_changes(old_run, {**old_run, "config_fingerprint": "c"}) == []  # another change: none named
    with pytest.raises(LedgerError) as e:
        check_run_identity(recorded, {**old_run, "config_fingerprint": "c", "dedup_decision": dedup_decision(old_cfg)})
    assert "dedup settings" not in str(e.value)


def test_an_output_of_the_parameters_of_before_resumes_with_them_only(crawl, tmp_path, ray_address):
    c, tok = crawl
    out = tmp_path / "out"
    built = run(make_config(str(c.manifest_path), str(out), tok, dedup=BEFORE))
    assert built["complete"] and built["docs"]["dropped"]["dedup:near"] > 0
    info = json.loads((out / "run.json").read_text())
    assert info["dedup_decision"] == {"threshold": 0.8, "verify_margin": 0.005} and "oph_bits" not in info["dedup_keys"]
    with pytest.raises(LedgerError, match=r"dedup.oph_bits 1, now 2; dedup.verify_margin 0.005, now 0.0125"):
        run(make_config(str(c.manifest_path), str(out), tok))  # the new defaults: refused, nothing written
    assert json.loads((out / "run.json").read_text()) == info
    again = run(make_config(str(c.manifest_path), str(out), tok, dedup=BEFORE))  # the old values: its own output
    assert again["this_run"]["processed"] == 0 and again["docs"] == built["docs"]
