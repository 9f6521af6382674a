"""The verdict table as data: one ``Claim`` per row (``analyses.claims.registry``).

Importing this package registers the built-in rows, in table order (``BUILTIN``). A row is a
module that calls ``register``; ``claims()`` lists them, ``decide(inputs)`` gives one
``Verdict`` per row, ``measured_text`` / ``reason_text`` state a verdict's evidence.
"""

from __future__ import annotations

import importlib

from analyses.claims.registry import (
    Claim,
    ClaimInputs,
    Outcome,
    SuiteInputs,
    claim,
    claims,
    decide,
    measured_text,
    reason_text,
    register,
    unregister,
)

__all__ = ["BUILTIN", "Claim", "ClaimInputs", "Outcome", "SuiteInputs", "claim", "claims", "decide",
           "measured_text", "reason_text", "register", "unregister"]

BUILTIN: tuple[str, ...] = (
    "analyses.claims.lemma2", "analyses.claims.assumption5",
    "analyses.claims.theorem1_rate", "analyses.claims.theorem1_proof", "analyses.claims.versus_backprop", "analyses.claims.proposition1",
    "analyses.claims.systems",
)
for _module in BUILTIN:
    importlib.import_module(_module)
