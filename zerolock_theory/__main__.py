"""``python -m zerolock_theory`` runs the ``zerolock`` command line."""

import sys

from zerolock_theory.app.cli import main

if __name__ == "__main__":  # not when a spawned worker process re-imports the main module
    sys.exit(main())
