"""Theorem 1: the rate of Ĝ_t described at this horizon (a), and the proof's drift step (b).

``convergence`` reads the series (and keeps the retired bound test, descriptive); ``rate`` the
rule of (a), ``rate_power`` its power, ``controls`` its registered controls, ``families`` the
known-answer series; ``drift_budget`` the pathwise budget of (b); ``bound_set`` the bound tests
per group; ``claim_rate`` and ``claim_proof``: the rows (docs/THEOREM1.md). Theorem 1 (b) reads
the drift's order from ``analyses.assumption5``, the one edge between families.
"""

# isort: skip_file
from analyses.theorem1 import claim_rate  # noqa: F401  (registers the rows: (a) first, then (b))
from analyses.theorem1 import claim_proof  # noqa: F401
