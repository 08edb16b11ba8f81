"""URL dedup end to end: a page recrawled at the same URL with new content is dropped as `dedup:url`."""

from __future__ import annotations

import io

from fastwarc.warc import ArchiveIterator, WarcRecordType

from raycorpus.demo.warcwrite import WarcWriter
from raycorpus.ingest.storage import Storage
from raycorpus.output.docfiles import read_jsonl_zst
from tests.support.corpus import make_config, run, shard_digests

DATE = "2026-01-02T03:04:05Z"
HTML = [("Content-Type", "text/html; charset=utf-8")]


def _articles(sample, n: int) -> list[bytes]:
    """HTML bodies of ``n`` English articles of the sample crawl (pages the default chain keeps)."""
    wanted = {p.url for p in sample.pages if p.kind == "article" and p.lang == "en" and not p.copy_of}
    bodies: dict[str, bytes] = {}
    for path in sample.warc_paths:
        with open(path, "rb") as f:
            for rec in ArchiveIterator(f, record_types=WarcRecordType.response, parse_http=True):
                u = rec.headers.get("WARC-Target-URI")
                if u in wanted and u not in bodies and rec.http_headers.status_code == 200:
                    bodies[u] = rec.reader.read()
    return [bodies[u] for u in sorted(bodies)[:n]]


def _write_warc(path, pages: list[tuple[str, bytes]]) -> None:
    buf = io.BytesIO()
    w = WarcWriter(buf)
    w.warcinfo({"software": "raycorpus tests"}, path.name, DATE)
    for u, body in pages:
        w.response(u, DATE, 200, HTML, body)
    path.write_bytes(buf.getvalue())


def test_a_recrawl_at_the_same_url_is_dropped_and_the_first_copy_kept(crawl, tmp_path, ray_address):
    c, tok = crawl
    a, b, cc, d, e = _articles(c, 5)
    warcs = [
        [("https://news.example/a", a), ("https://news.example/b?id=1&lang=en", b)],
        # /a again, with new content, behind a campaign link with a fragment, an uppercase host and the default port
        [("HTTPS://NEWS.example:443/a?utm_source=feed&fbclid=x#comments", cc), ("https://news.example/d", d)],
        [("https://news.example/b?id=1&lang=en&gclid=7", e)],  # /b recrawled a WARC later
    ]
    (tmp_path / "in").mkdir()
    for i, pages in enumerate(warcs):
        _write_warc(tmp_path / "in" / f"{i}.warc.gz", pages)
    manifest = tmp_path / "in" / "warc.paths"
    manifest.write_text("".join(f"{i}.warc.gz\n" for i in range(len(warcs))))
    outs = {}
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        s = run(make_config(str(manifest), str(out), tok, output={"documents": True}, ray={"workers": workers},
                            dedup={"audit": True, "shards": workers}))
        # all five pages pass the filters; the two recrawls are dropped for their URL alone (new text each)
        assert s["docs"]["dropped"].get("dedup:url") == 2 and s["docs"]["kept"] == 3, s["docs"]
        outs[workers] = (out, s)
    assert shard_digests(outs[1][0]) == shard_digests(outs[2][0])  # the same bytes with 1 or 2 workers (and shards)
    out, s = outs[2]
    st = Storage()
    docs = [r for u in sorted(st.list(str(out / "documents"))) for r in read_jsonl_zst(st, u)]
    assert [r["url"] for r in docs] == ["https://news.example/a", "https://news.example/b?id=1&lang=en",
                                        "https://news.example/d"]  # the first copies, in manifest order
    audit = [r for u in sorted(st.list(str(out / "exclusions"))) for r in read_jsonl_zst(st, u)]
    assert [(r["reason"], r["id"], r["dup_of"], r["jaccard"]) for r in audit] == [
        ("dedup:url", "1/0", "0/0", None), ("dedup:url", "2/0", "0/1", None)]
