"""zerolock-theory: test the claims of ZeroLock (arXiv 2608.07974) on real language models.

Names follow ``MATH.md``: chunks k = 1..K, readouts p_k, targets m_k (arithmetic) and g_k
(geometric), local losses ℓ^F (forward, what implementations train) and ℓ^R (reverse, what
the paper analyses).
"""

from zerolock_theory.theory.divergences import cross_entropy, entropy, jensen_shannon, kl, total_variation
from zerolock_theory.theory.losses import DegenerateObjectiveError, local_loss, local_loss_from_logits
from zerolock_theory.theory.targets import arithmetic_target, geometric_target, label_smooth, one_hot

__version__ = "0.1.0"

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
