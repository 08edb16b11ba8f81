"""run.split_warcs: auto / off / a number of ranges; a bad value names the field; the output (and so the
fingerprint) is the same whatever it is."""

import pytest

from raycorpus.config import ConfigError, config_from_dict, load_config
from tests.test_config import GOOD


@pytest.mark.parametrize("value", [0, -2, "half", 2.5, None])
def test_bad_split_warcs_is_named(value):
    with pytest.raises(ConfigError) as e:
        config_from_dict({**GOOD, "run": {"split_warcs": value}})
    assert "  run.split_warcs: " in str(e.value) and "`auto`, `off` or a number of ranges >= 1" in str(e.value)


def test_split_warcs_values_and_yaml_off(tmp_path):
    assert config_from_dict(GOOD).run.split_warcs == "auto"
    p = tmp_path / "c.yaml"
    p.write_text("input: {manifest: m.txt}\noutput: {path: o}\ntokenizer: {path: t.json}\nrun: {split_warcs: off}\n")
    assert load_config(p).run.split_warcs == "off"  # YAML 1.1 reads a bare off as false
    assert config_from_dict({**GOOD, "run": {"split_warcs": 8}}).run.split_warcs == 8


def test_split_warcs_is_not_in_the_fingerprint():
    prints = {config_from_dict({**GOOD, "run": {"split_warcs": v}}).fingerprint() for v in ("auto", "off", 1, 8)}
    assert prints == {config_from_dict(GOOD).fingerprint()}
