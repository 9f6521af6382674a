"""The un-detached twin of ZeroLock: the same local losses, summed and backpropagated through all chunks.

ZeroLock minimises each chunk's ℓ_k on the detached input h^t_{k-1} (docs/MATH.md, "Local
losses"; Lemma 3's block-diagonal step). The twin keeps every ℓ_k, with its own α
(``config.alpha_of``) and its detached target p_{k-1}, but differentiates

    J(ω) = Σ_k w_k·ℓ_k(p_k(ω_1..ω_k))

through the connected forward h_0 → h_1 → … → h_K, so ω_j receives Σ_{k ≥ j} w_k ∂ℓ_k/∂ω_j. The
target p_{k-1} stays a constant (a teacher, as in ZeroLock): only the path through the hidden
states is un-detached. It separates "the objective costs" (the twin is as bad as ZeroLock) from
"detaching costs" (the twin is as good as backprop); docs/DIAGNOSIS.md.

Known answers (tests/training/test_undetached.py): at K = 1, α = 1 the twin is backprop, bit for
bit; at any K with w = (0, …, 0, 1) and α_K = 1 it is backprop. A term with w_k = 0 is left out
of the sum (no graph, so no 0·∞); its terms are still reported. Unsliced: the readout of a chunk
is one [N, V] block (``model.readout_chunk_size`` does not apply).
"""

from __future__ import annotations

import torch

from zerolock_theory.config import MethodConfig
from zerolock_theory.records import CHUNK
from zerolock_theory.training.losses import SUM_KEYS, LossSpec, Readout, chunk_loss

__all__ = ["loss_weights", "undetached_backward", "undetached_loss"]


def loss_weights(method: MethodConfig, chunks: int) -> list[float]:
    """w_1..w_K of the twin's sum (``method.loss_weights``; all 1 when unset)."""
    return [1.0] * chunks if method.loss_weights is None else [float(w) for w in method.loss_weights]


def undetached_loss(readout: Readout, method: MethodConfig, batch: dict[str, torch.Tensor],
                    n: int | torch.Tensor) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """J = Σ_k w_k·ℓ_k on ``batch`` / n with its graph through every chunk, and each chunk's loss
    terms (``chunk/{k}/{loss,task,consistency,ce}``, on the device, unweighted)."""
    chunked, labels = readout.chunked, batch["labels"]
    weights = loss_weights(method, chunked.num_chunks)
    with readout.autocast():
        hiddens = chunked.hiddens(batch["input_ids"], batch.get("attention_mask"))
    total: torch.Tensor | None = None
    metrics: dict[str, torch.Tensor] = {}
    prev = None
    for k in range(1, chunked.num_chunks + 1):
        spec, w = LossSpec.local(method, k), weights[k - 1]
        if w == 0.0:
            with torch.no_grad():
                part = chunk_loss(readout, spec, hiddens[k].detach(), hiddens[k - 1].detach(), labels, k, n, prev)
        else:
            part = chunk_loss(readout, spec, hiddens[k], hiddens[k - 1].detach(), labels, k, n, prev)
            term = part.loss if w == 1.0 else w * part.loss
            total = term if total is None else total + term
        metrics.update({CHUNK.key(k, key): part.totals[i] for i, key in enumerate(SUM_KEYS)})
        prev = part.prev
    assert total is not None  # MethodConfig: not every weight is 0
    return total, metrics


def undetached_backward(readout: Readout, method: MethodConfig, batch: dict[str, torch.Tensor],
                        n: int | torch.Tensor) -> dict[str, torch.Tensor]:
    """∇ of ``undetached_loss`` into ``.grad`` through every chunk; each chunk's loss terms.

    In a population (``n`` one count per member) J is one value per member: their sum is
    backpropagated, and each member's adapters receive their own J's gradient alone (a member's
    rows pass through its own adapters only)."""
    total, metrics = undetached_loss(readout, method, batch, n)
    total.backward(torch.ones_like(total))  # a scalar's implicit gradient, or 1 per member
    return metrics
