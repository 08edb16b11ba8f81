"""raycorpus: deterministic, resumable Common Crawl -> token shards on Ray.

The core modules (everything outside ``raycorpus.runtime`` and ``raycorpus.cli``)
never import Ray, so they can be unit-tested and benchmarked in-process.
"""

__version__ = "0.1.0"
