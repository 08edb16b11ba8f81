"""A small synthetic crawl (real WARC records, generated pages) for the demo and the tests.

Modules: ``vocabulary`` (the word lists and templates in ``vocab/*.json``, loaded once), ``text``
(sentences, paragraphs, articles), ``render`` (HTML), ``payloads`` (PNG, PDF), ``pages`` (the page
kinds of a WARC and how each is made), ``crawl`` (:func:`write_sample_crawl`), ``warcwrite`` (records).
"""

from raycorpus.demo.crawl import SampleCrawl, SamplePage, write_sample_crawl

__all__ = ["SampleCrawl", "SamplePage", "write_sample_crawl"]
