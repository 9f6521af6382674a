"""ZeroLock against backprop: each method at its own best η_0, and the pilot's pair beside it.

``tuning`` selects each method's η_0 on validation, ``tuned_versus`` decides the row on test,
``tuned`` tabulates a tune directory, ``pilot`` compares at the pilot's η_0 pair (descriptive),
``families`` holds the known-answer constructions, ``claim`` the row (docs/TUNED.md).
"""

from analyses.versus import claim  # noqa: F401  (registers the row)
