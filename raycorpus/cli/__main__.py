import sys

from raycorpus.cli import main

sys.exit(main())
