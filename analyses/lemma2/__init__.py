"""Lemma 2: the two targets m_k and g_k, how far apart they are, and which one training moves toward.

``targets``: Lemma 2 as stated, for the CE loss, the mismatch on the model, the tracking null;
``fixed_point`` and ``fixed_point_controls``: the fixed-point experiment, each arm decided on its own;
``families``: its known-answer catalogue; ``claim``: the rows (docs/LEMMA2.md).
"""

from analyses.lemma2 import claim  # noqa: F401  (registers the rows)
