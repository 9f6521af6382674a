"""zerolock-theory: test the claims of ZeroLock (arXiv 2608.07974) on real language models.

Names follow ``docs/MATH.md``: chunks k = 1..K, readouts p_k, targets m_k (arithmetic) and g_k
(geometric), local losses ℓ^F (forward, what implementations train) and ℓ^R (reverse, what
the paper analyses).
"""

import importlib
from typing import Any

# Lazy (PEP 562): ``import zerolock_theory`` (and so ``zerolock --help``) must not import torch.
_LAZY = {
    "cross_entropy": "divergences", "entropy": "divergences", "jensen_shannon": "divergences",
    "kl": "divergences", "total_variation": "divergences",
    "DegenerateObjectiveError": "losses", "local_loss": "losses", "local_loss_from_logits": "losses",
    "arithmetic_target": "targets", "geometric_target": "targets", "label_smooth": "targets",
    "one_hot": "targets",
}


def __getattr__(name: str) -> Any:
    """Import the theory functions of ``__all__`` on first use."""
    if name in _LAZY:
        return getattr(importlib.import_module(f"zerolock_theory.theory.{_LAZY[name]}"), name)
    raise AttributeError(f"module 'zerolock_theory' has no attribute {name!r}")


__version__ = "0.1.0"

__all__ = sorted(_LAZY)  # the theory layer's public functions (zerolock_theory.theory.__all__)
