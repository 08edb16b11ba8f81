"""A default that changes the output (``filters.langid.early_exit``, on since lid.176's early exit was measured to
change no label) gives a new config fingerprint: an output started under the default of before refuses to resume
with the new one, says which setting to write, and resumes once it is written."""

from __future__ import annotations

import json

import pytest

from raycorpus.config import config_from_dict
from raycorpus.ingest.storage import Storage
from raycorpus.output.ledger import Ledger, LedgerError
from raycorpus.runtime.driver import check_run_identity
from tests.support.corpus import make_config, run

GOOD = {"input": {"manifest": "m.txt"}, "output": {"path": "out"}, "tokenizer": {"path": "tok.json"}}
BEFORE = {"langid": {"early_exit": False}}  # every window: the language ID of before the default
HINT = "add `filters: {langid: {early_exit: false}}` to its config"


def test_the_refusal_names_the_earlier_default_and_only_when_it_is_the_difference(tmp_path):
    new, old = config_from_dict(GOOD), config_from_dict({**GOOD, "filters": BEFORE})
    assert new.filters.langid.early_exit and new.earlier_defaults() == {
        "filters: {langid: {early_exit: false}}": old.fingerprint()}
    assert config_from_dict({**GOOD, "filters": {"langid": {"early_exit": True}}}).earlier_defaults() == {}
    assert config_from_dict({**GOOD, "filters": {"langid": {"keep": None}}}).earlier_defaults() == {}  # (ensemble)
    ledger = Ledger(Storage(), str(tmp_path / "before"))
    check_run_identity(ledger, {"config_fingerprint": old.fingerprint(), "warcs": 4})
    with pytest.raises(LedgerError, match=r"started under an earlier default; to finish it, add `filters: \{langid: "
                                          r"\{early_exit: false\}\}` to its config"):
        check_run_identity(ledger, {"config_fingerprint": new.fingerprint(), "warcs": 4}, None,
                           new.earlier_defaults())
    other = config_from_dict({**GOOD, "filters": {"langid": {"threshold": 0.5}}})  # another setting changed too
    with pytest.raises(LedgerError, match="use a new output path or the original settings") as e:
        check_run_identity(ledger, {"config_fingerprint": other.fingerprint(), "warcs": 4}, None,
                           other.earlier_defaults())
    assert "early_exit" not in str(e.value)


def test_an_output_of_the_default_of_before_resumes_with_it_written(crawl, tmp_path, ray_address):
    c, tok = crawl
    out = tmp_path / "out"
    built = run(make_config(str(c.manifest_path), str(out), tok, filters=BEFORE))
    assert built["complete"] and built["docs"]["kept"] > 0
    info = json.loads((out / "run.json").read_text())
    with pytest.raises(LedgerError, match=HINT.replace("{", r"\{").replace("}", r"\}")):
        run(make_config(str(c.manifest_path), str(out), tok))  # the new default: refused, nothing written
    assert json.loads((out / "run.json").read_text()) == info
    again = run(make_config(str(c.manifest_path), str(out), tok, filters=BEFORE))
    assert again["this_run"]["processed"] == 0 and again["docs"] == built["docs"]
