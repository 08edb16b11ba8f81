"""The training side: read built corpora as token windows (loader) and mix several of them (mix)."""
