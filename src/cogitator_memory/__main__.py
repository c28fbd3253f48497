"""``python -m cogitator_memory``: the same command line as ``cogitator-memory``."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
