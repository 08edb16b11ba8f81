"""Moved to :mod:`raycorpus.demo` (``from raycorpus.demo import write_sample_crawl``; the code is in
:mod:`raycorpus.demo.crawl`); this old import path keeps working for one release (0.2)."""

import sys
import warnings

from raycorpus.demo import crawl as _moved

warnings.warn("raycorpus.demo.sample moved to raycorpus.demo (raycorpus.demo.crawl); the old path goes in "
              "raycorpus 0.3", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
