"""Output: token shards and their formats, document files, the ledger, the single writer, the output lock."""
