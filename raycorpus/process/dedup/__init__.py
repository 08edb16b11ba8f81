"""Near-duplicate detection: MinHash signatures, LSH band keys and band tables (Ray-free)."""
