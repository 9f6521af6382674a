"""Assumption 5: the stability ratio ρ_t along the run, at fixed iterates, and the drift's order.

``step_limits`` classifies each scaled step's limit; ``along_run`` (the row), ``scaling`` (the
uniform and chance statements, and the group analysis), ``drift_order`` (the drift's order at
fixed iterates, read by Theorem 1 (b)); ``families``: known-answer probe frames; ``claim``: the
rows (docs/ASSUMPTION5_PROPOSITION1.md).
"""

from analyses.assumption5 import claim  # noqa: F401  (registers the rows)
