"""The mathematics of docs/MATH.md: divergences, targets, local losses, minimizers, Lemma 1,
surrogates, the stability quantities and the sympy derivations.

This subpackage is the bottom layer: it imports nothing else from ``zerolock_theory``.
"""

from zerolock_theory.theory.divergences import (
    cross_entropy,
    entropy,
    jensen_shannon,
    kl,
    total_variation,
)
from zerolock_theory.theory.losses import (
    DegenerateObjectiveError,
    local_loss,
    local_loss_from_logits,
)
from zerolock_theory.theory.targets import (
    arithmetic_target,
    geometric_target,
    label_smooth,
    one_hot,
)

__all__ = [
    "DegenerateObjectiveError",
    "arithmetic_target",
    "cross_entropy",
    "entropy",
    "geometric_target",
    "jensen_shannon",
    "kl",
    "label_smooth",
    "local_loss",
    "local_loss_from_logits",
    "one_hot",
    "total_variation",
]
