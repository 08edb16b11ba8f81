"""Document processing, one WARC at a time and Ray-free: extraction, the filter chain, dedup, tokenizing."""
