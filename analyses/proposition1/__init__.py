"""Proposition 1: what the local losses imply about the task loss through depth, as algebra.

``identity``: the implied inequalities checked and the transcription's counterexample;
``claim``: the analytic row (docs/ASSUMPTION5_PROPOSITION1.md).
"""

from analyses.proposition1 import claim  # noqa: F401  (registers the row)
