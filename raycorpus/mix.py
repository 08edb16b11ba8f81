"""Moved to :mod:`raycorpus.training.mix`; this old import path keeps working for one release (0.2)."""

import sys
import warnings

from raycorpus.training import mix as _moved

warnings.warn("raycorpus.mix moved to raycorpus.training.mix; the old path goes in raycorpus 0.3",
              DeprecationWarning, stacklevel=2)
sys.modules[__name__] = _moved
