"""Input: where bytes come from (storage: local, s3, https), the manifest, WARC records."""
