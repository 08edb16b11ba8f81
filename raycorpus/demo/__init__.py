"""A small synthetic crawl (real WARC records, generated pages) for the demo and the tests."""
