"""``python -m zerolock_theory`` runs the ``zerolock`` command line."""

import sys

from zerolock_theory.cli import main

sys.exit(main())
