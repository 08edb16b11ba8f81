"""`input.format: wet`: a WET file holding the shipped extractor's text of a WARC's pages gives the
same documents, hashes and signatures as the WARC (no extraction; the same filters after it)."""

from raycorpus.process.pipeline import WarcProcessor
from tests.support.corpus import make_config
from tests.support.wet import wet_manifest


def test_wet_of_the_extractors_text_gives_the_warcs_documents(crawls, tmp_path):
    c, tok = crawls(2, 30)
    manifest = wet_manifest(c.warc_paths, tmp_path / "wet")
    warc_cfg = make_config(str(c.manifest_path), str(tmp_path / "a"), tok)
    wet_cfg = make_config(str(manifest), str(tmp_path / "b"), tok, input={"format": "wet"})
    warc_proc, wet_proc = WarcProcessor(warc_cfg), WarcProcessor(wet_cfg)
    kept = 0
    for ordinal, (warc, wet) in enumerate(zip(c.warc_paths, manifest.read_text().split(), strict=True)):
        a, b = warc_proc.process(ordinal, str(warc)), wet_proc.process(ordinal, wet)
        assert [(d.url, d.record_id, d.text) for d in b.docs] == [(d.url, d.record_id, d.text) for d in a.docs]
        assert b.content_hashes.tolist() == a.content_hashes.tolist() and (b.signatures == a.signatures).all()
        drops = {k: n for k, n in a.counts.items() if k.kind.value == "drop" and k.name != "extract"}
        assert {k: n for k, n in b.counts.items() if k.kind.value == "drop"} == drops  # the same filter verdicts
        kept += len(a.docs)
    assert kept > 20 and wet_cfg.fingerprint() != warc_cfg.fingerprint()
