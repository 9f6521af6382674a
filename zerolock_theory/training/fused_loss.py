"""The readout loss over the vocabulary and its gradient with respect to the logits, in one pass.

``loss_and_grad`` computes, for logits z of chunk k ([..., V], any float dtype), the terms of
``theory.losses.local_loss_from_logits`` (loss, task, consistency, ce; docs/MATH.md, "Local
losses") and dℓ/dz in closed form, walking the positions in blocks of rows (``block_rows``) so
that every [rows, V] temporary is one block's, in fp32, and the [N, V] tensors it touches are the
logits, the previous readout's logits and the gradient it writes (each in the logits' dtype).
With p = softmax(z), q = p_{k-1}, the smoothed label p_y^ε = (1-ε)·e_y + ε/V and
ℓ = α·task + (1-α)·consistency:

* forward, ℓ = α·CE(p_y^ε, p) + (1-α)·KL(q ‖ p):  dℓ/dz = p − α·p_y^ε − (1-α)·q;
* reverse, ℓ = α·KL(p ‖ p_y^ε) + (1-α)·KL(p ‖ q):  dℓ/dz = p ⊙ (log p − a − ℓ),
  a = α·log p_y^ε + (1-α)·log q  (d KL(p ‖ r)/dz = p ⊙ (log p − log r − KL(p ‖ r))).

Every log-probability is formed as (z − max z) + log max p: the log-sum-exp of a row is kept
as that pair (``norm``), never rounded to one float, so log p and log q keep the absolute
precision of ``log_softmax`` however large the logits. Positions without a label (−100) carry
no term and no gradient. q is constant (detached): it is given as ``Prev``, the previous
readout's logits with, when chunk k−1 computed it, their ``norm`` (the next chunk reuses chunk
k's z and norm), or the uniform p_0. Reverse with ε = 0 has task = +inf (KL(p ‖ e_y)); it is
allowed only at α = 0, where the task term is absent (as in ``local_loss_from_logits``, a zero
weight drops a term).
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass
from typing import Any

import torch

from zerolock_theory.theory.losses import IGNORE_INDEX, check_local_loss

__all__ = ["BLOCK_ELEMENTS", "EXP_FLOOR", "Prev", "block_rows", "log_sum_exp", "loss_and_grad", "working_set"]

EXP_FLOOR = -87.0
"""The smallest argument given to exp on a CPU. There exp(x) for x < −87.3 (a subnormal or zero
float32) costs about 40 × a normal one, so log q and z − max z are raised to −87 before exp
(only there: log q and log p themselves are not clamped): such an entry of p or q counts as
e^−87 ≈ 1.6e−38 instead of (nearly) 0, at most V·1.6e−38 in a sum of 1."""

BLOCK_ELEMENTS = {"cpu": 1 << 19, "cuda": 1 << 22}
"""fp32 elements of one block's temporaries by device type (others: cuda's): on a CPU about a
core's share of the cache (2 MiB), on a GPU 16 MiB (a few blocks of a batch's logits: few
launches, no whole-sequence fp32 copy)."""


@dataclass(frozen=True)
class Prev:
    """The detached previous readout p_{k-1}: logits [..., V] and their ``norm`` [2, ...] (max z,
    log max p: lse = max z − log max p; None: computed here), or the uniform distribution
    (``logits`` None). ``owned``: nothing else reads ``logits``, so the loss that consumes it may
    write its gradient there."""

    logits: torch.Tensor | None
    norm: torch.Tensor | None = None
    owned: bool = False

    def rows(self, vocab: int) -> Prev:
        """The same readout with its positions flattened to rows."""
        if self.logits is None:
            return self
        return Prev(self.logits.reshape(-1, vocab), None if self.norm is None else self.norm.reshape(2, -1), self.owned)


def log_sum_exp(norm: torch.Tensor) -> torch.Tensor:
    """The log-sum-exp of the rows whose ``norm`` this is."""
    return norm[0] - norm[1]


def block_rows(vocab: int, device: torch.device) -> int:
    """Rows of one block (``BLOCK_ELEMENTS`` / V, at least 1)."""
    return max(1, BLOCK_ELEMENTS.get(device.type, BLOCK_ELEMENTS["cuda"]) // vocab)


class _Temps:
    """One block's fp32 work buffers [rows, V], allocated once per call and reused by every block."""

    def __init__(self, rows: int, vocab: int, device: torch.device) -> None:
        self.bufs = [torch.empty(rows, vocab, device=device) for _ in range(5)]

    def __call__(self, rows: int) -> list[torch.Tensor]:
        return [b[:rows] for b in self.bufs]


def _fp32(block: torch.Tensor, buf: torch.Tensor | None) -> torch.Tensor:
    """``block`` in fp32: itself, or (low precision) its copy in ``buf``, an fp32 buffer of the
    block's size kept for the whole call so that a meter counts it with the work buffers."""
    return block if buf is None else buf[:block.shape[0]].copy_(block)


class _Held(torch.autograd.Function):
    """Saves ``tensors`` for a backward that never runs: while the returned handle lives, a
    saved-tensor meter (``pipeline.memory.SavedTensorMeter``) counts them. The fused loss saves
    nothing logits-sized for backward, yet its logits, its target's, its gradient and its fp32 work
    blocks are alive at once; without this the meter, which the memory verdict reads, would not
    see them. The loss holds them only when it computes a gradient (a training step)."""

    @staticmethod
    def forward(ctx: Any, anchor: torch.Tensor, *tensors: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(*tensors)
        return anchor.detach()

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> tuple[None, ...]:  # pragma: no cover (never called)
        return (None,) * (1 + len(ctx.saved_tensors))


def working_set(*tensors: torch.Tensor | None) -> torch.Tensor:
    """A handle that keeps ``tensors`` counted by an active saved-tensor meter until it is dropped
    (with grad mode on or off)."""
    with torch.enable_grad():  # also from inside loss_and_grad, which runs under no_grad
        anchor = torch.zeros((), requires_grad=True)
        return _Held.apply(anchor, *(t.detach() for t in tensors if t is not None))


def _exp(x: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """exp(x) into ``out``; on a CPU x is first raised to ``EXP_FLOOR`` (module constant)."""
    if x.device.type == "cpu":
        return torch.clamp_min(x, EXP_FLOOR, out=out).exp_()
    return torch.exp(x, out=out)


def _softmax_norm(z: torch.Tensor, p: torch.Tensor, tmp: torch.Tensor) -> torch.Tensor:
    """softmax(z) into ``p`` (one exp of z) and the rows' norm (max z, log max p): p is largest
    where z is. Chunk k's norm and the one computed here for a target read out again are the
    same computation, bit for bit. On a CPU z is first raised to max z + ``EXP_FLOOR`` (in ``tmp``)."""
    top = z.amax(-1)
    if z.device.type == "cpu":
        z = torch.maximum(z, (top + EXP_FLOOR).unsqueeze(-1), out=tmp)
    torch.softmax(z, -1, out=p)
    return torch.stack([top, p.amax(-1).log()])


def _log_probs(z: torch.Tensor, norm: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """log softmax(z) = (z − max z) + log max p into ``out``."""
    return torch.sub(z, norm[0].unsqueeze(-1), out=out).add_(norm[1].unsqueeze(-1))


def _dot(a: torch.Tensor, b: torch.Tensor, tmp: torch.Tensor) -> torch.Tensor:
    """Σ_v a·b per row, the product in ``tmp``."""
    return torch.mul(a, b, out=tmp).sum(-1)


def _product_into(out: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> None:
    """a·b into ``out``; ``a`` is an fp32 work buffer free to overwrite. For a low-precision ``out``
    the product is formed in ``a`` and cast by the copy: ``torch.mul(..., out=bf16)`` on a CPU
    computes into a hidden fp32 temporary of the block's size, which no meter would count."""
    if out.dtype == a.dtype:
        torch.mul(a, b, out=out)
    else:
        out.copy_(a.mul_(b))


def _weighted(weight: float, value: torch.Tensor) -> torch.Tensor:
    return torch.zeros_like(value) if weight == 0.0 else weight * value


def _block(z: torch.Tensor, y: torch.Tensor, prev: tuple[torch.Tensor, torch.Tensor] | None, alpha: float,
           forward: bool, eps: float, w: torch.Tensor | None, out: torch.Tensor | None,
           temps: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """One block of rows (z fp32): the unmasked terms [4, rows] and the norm [2, rows]; with ``w``
    (each row's weight), w·dℓ/dz into ``out``, which may be ``z`` itself (every read of z comes
    first). ``prev`` is the block's (z_{k-1} in fp32, its norm); None for the uniform p_0 or when α = 1."""
    vocab = z.shape[-1]
    P, Q, T, D, S = temps
    norm = _softmax_norm(z, P, D)
    top, log_top = norm
    y1 = y.unsqueeze(-1)
    ce = (top - z.gather(-1, y1).squeeze(-1)) - log_top
    uniform = prev is None and alpha < 1.0
    if forward:
        # CE(p_y^ε, p) = (1−ε)·ce + ε·(lse − mean z);  KL(u ‖ p) = lse − mean z − log V
        spread = (top - z.mean(-1)) - log_top if eps > 0 or uniform else None
        task = (1.0 - eps) * ce + eps * spread if eps > 0 else ce
        if alpha == 1.0:
            cons = torch.zeros_like(ce)
        elif uniform:
            cons = spread - math.log(vocab)
        else:  # KL(q ‖ p) = Σ q·(log q − log p)
            zp, norm_p = prev
            log_q = _log_probs(zp, norm_p, S)
            _exp(log_q, Q)
            cons = _dot(Q, log_q.sub_(_log_probs(z, norm, T)), D)
        loss = _weighted(alpha, task) + _weighted(1.0 - alpha, cons)
        if w is not None:  # w·(p − α·p_y^ε − (1−α)·q)
            if alpha < 1.0:
                P.sub_((1.0 - alpha) / vocab) if uniform else P.sub_(Q, alpha=1.0 - alpha)
            if alpha > 0.0 and eps > 0:
                P.sub_(alpha * eps / vocab)
            if alpha > 0.0:
                P.scatter_add_(-1, y1, torch.full_like(ce, -alpha * (1.0 - eps)).unsqueeze(-1))
            _product_into(out, P, w.unsqueeze(-1))
        return torch.stack([loss, task, cons, ce]), norm
    log_p = _log_probs(z, norm, T)
    neg_entropy = _dot(P, log_p, D)
    if eps > 0:
        log_off, log_on = math.log(eps / vocab), math.log(1.0 - eps + eps / vocab)
        task = neg_entropy - (log_off + P.gather(-1, y1).squeeze(-1) * (log_on - log_off))
    else:
        log_off = log_on = 0.0  # α = 0 (checked): task is +inf and carries no weight
        task = torch.full_like(ce, math.inf)
    shift = 0.0  # the constant part of (1−α)·log q
    if alpha == 1.0:
        cons = torch.zeros_like(ce)
    elif uniform:
        cons, shift = neg_entropy + math.log(vocab), -(1.0 - alpha) * math.log(vocab)
    else:
        zp, norm_p = prev
        cons = neg_entropy - _dot(P, _log_probs(zp, norm_p, Q), D)
    loss = _weighted(alpha, task) + _weighted(1.0 - alpha, cons)
    if w is not None:  # w·p ⊙ (log p − α·log p_y^ε − (1−α)·log q − ℓ)
        if alpha < 1.0 and not uniform:
            log_p.sub_(Q, alpha=1.0 - alpha)
        log_p.sub_((loss + alpha * log_off + shift).unsqueeze(-1))
        if alpha > 0.0:
            log_p.scatter_add_(-1, y1, torch.full_like(ce, -alpha * (log_on - log_off)).unsqueeze(-1))
        _product_into(out, P.mul_(w.unsqueeze(-1)), log_p)
    return torch.stack([loss, task, cons, ce]), norm


@torch.no_grad()
def loss_and_grad(logits: torch.Tensor, labels: torch.Tensor, prev: Prev | None, alpha: float, direction: str,
                  epsilon: float, scale: float | torch.Tensor = 1.0, *, grad: bool = True,
                  out: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
    """The masked per-position terms [4, ...] (loss, task, consistency, ce), d(scale·Σ loss)/dz in
    ``logits``' dtype (None without ``grad``) and the logits' norm [2, ...] (fp32; ``Prev``).

    The gradient is written into ``out`` when given (a tensor of the logits' shape and dtype whose
    values are no longer needed: ``logits`` itself or the previous readout's logits), else into a
    new tensor. ``prev`` is needed only when α < 1. No host synchronisation: the blocks depend on
    shapes only.
    """
    check_local_loss(direction, alpha, epsilon, has_prev=prev is not None)
    shape, vocab = labels.shape, logits.shape[-1]
    z, y = logits.reshape(-1, vocab), labels.reshape(-1)
    mask = y != IGNORE_INDEX
    y = torch.where(mask, y, torch.zeros_like(y)).long()
    weight = mask * scale
    prev = prev.rows(vocab) if prev is not None and alpha < 1.0 else None
    terms = torch.empty(4, z.shape[0], device=z.device)
    norm = torch.empty(2, z.shape[0], device=z.device)
    dz = None if not grad else torch.empty_like(z) if out is None else out.view(z.shape)
    step = min(z.shape[0], block_rows(vocab, z.device))
    prev_logits = None if prev is None else prev.logits
    temps = _Temps(step, vocab, z.device)
    cast_z, cast_prev = (torch.empty(step, vocab, device=z.device) if t is not None and t.dtype != torch.float32
                         else None for t in (z, prev_logits))
    held = working_set(z, dz, *temps.bufs, cast_z, cast_prev, prev_logits) if grad else None  # for a meter
    plain = z.device.type in ("cpu", "cuda")  # fp32 work buffers whatever the caller's autocast
    with torch.autocast(z.device.type, enabled=False) if plain else contextlib.nullcontext():
        for start in range(0, z.shape[0], step):
            rows = slice(start, start + step)
            zb = _fp32(z[rows], cast_z)
            block_prev = None
            if prev_logits is not None:
                zp = _fp32(prev_logits[rows], cast_prev)
                block_prev = (zp, _softmax_norm(zp, *temps(zp.shape[0])[:2]) if prev.norm is None
                              else prev.norm[:, rows])
            terms[:, rows], norm[:, rows] = _block(zb, y[rows], block_prev, alpha, direction == "forward", epsilon,
                                               None if dz is None else weight[rows],
                                               None if dz is None else dz[rows], temps(zb.shape[0]))
    del held
    terms = torch.where(mask, terms, torch.zeros((), device=z.device))
    return terms.reshape(4, *shape), None if dz is None else dz.view(logits.shape), norm.reshape(2, *shape)
