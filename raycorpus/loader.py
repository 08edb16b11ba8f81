"""Moved to :mod:`raycorpus.training.loader`; this old import path keeps working for one release (0.2)."""

import sys
import warnings

from raycorpus.training import loader as _moved

warnings.warn("raycorpus.loader moved to raycorpus.training.loader; the old path goes in raycorpus 0.3",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
