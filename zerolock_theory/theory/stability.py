"""Assumption 5: the stability ratio (docs/MATH.md, "Assumption 5: the stability ratio").

On a fixed probe batch of N positions, with the chunk outputs p_k(ω^t) held fixed,

    R(ω^t; p̃) = (1/N) Σ_n Σ_k D_k(n; p̃),
    D_k = KL(p_k ‖ g_k(p_{k-1}))  (paper)   or   KL(m_k(p_{k-1}) ‖ p_k)  (implemented),

where p̃ = (p_0, …, p_{K-1}) are the upstream readouts. For one step t → t+1:

* φ_t = ⟨∇_p̃ R(ω^t; p̃^t), Δp̃_t⟩ (Euclidean, all K·N·V coordinates), from the closed forms
  ∂/∂p_{k-1} KL(p_k ‖ g_k) = (1-α)(g_k − p_k)/p_{k-1} and
  ∂/∂p_{k-1} KL(m_k ‖ p_k) = (1-α)(log(m_k/p_k) + 1), each divided by N (the fast path);
  optionally also by autograd through the definition of R (the check);
* the size of the shift q_t = ‖Δp̃_t‖² = (1/N) Σ_n Σ_k ‖Δp^t_{k-1}(n)‖², a per-position mean
  like φ_t, so that nothing depends on N (duplicating the probe batch changes nothing);
* the ratio ρ_t = max(φ_t, 0)/q_t, the actual change R(ω^t; p̃^{t+1}) − R(ω^t; p̃^t) and the
  remainder (actual − φ_t).

Chunk k (1-based) pairs p̃[k-1] = p_{k-1} with p_out[k-1] = p_k; every quantity is reported
per chunk (a [K] tensor; R, φ and q add over chunks) and in total. Everything is float64.

Undefined values: ρ is NaN where q = 0 (always so for chunk 1 when p_0 is the frozen
embedding readout). Where R itself is +inf (the paper objective with a one-hot p_y) the
affected φ, ρ, actual change and remainder are +inf, never NaN, and ``defined`` is False
with a ``reason``. ``as_metric`` turns NaN into ``None`` for logging and keeps ±inf.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import torch

from zerolock_theory.theory.surrogate import check_objective
from zerolock_theory.theory.targets import arithmetic_target, geometric_target

__all__ = ["FirstOrder", "FirstOrderTotals", "StabilityTerms", "as_metric", "chunk_divergence", "first_order_totals", "in_readout_range", "shared_totals",
           "stability_terms"]

Objective = Literal["paper", "implemented"]
_TENSOR_FIELDS = ("r_before", "r_after", "phi", "q", "ratio", "actual", "remainder")


def as_metric(x: torch.Tensor | float | None) -> float | None:
    """A loggable float: NaN (undefined) → ``None``; ±inf stay ±inf; finite values as is."""
    if x is None:
        return None
    value = float(x)
    return None if math.isnan(value) else value


@dataclass(frozen=True)
class StabilityTerms:
    """Assumption 5 quantities for one step: per chunk ([K], float64) and ``*_total`` (scalars)."""

    objective: str
    alpha: float
    r_before: torch.Tensor  # R_k(ω^t; p̃^t) = (1/N) Σ_n D_k
    r_after: torch.Tensor  # R_k(ω^t; p̃^{t+1})
    phi: torch.Tensor  # φ_k from the closed-form gradient
    phi_autograd: torch.Tensor | None  # φ_k by autograd (None unless requested)
    q: torch.Tensor  # q_k = (1/N) Σ_n ‖p_{k-1}^{t+1}(n) − p_{k-1}^t(n)‖²
    ratio: torch.Tensor  # max(φ_k, 0) / q_k
    actual: torch.Tensor  # r_after − r_before
    remainder: torch.Tensor  # actual − phi
    r_before_total: torch.Tensor
    r_after_total: torch.Tensor
    phi_total: torch.Tensor
    phi_autograd_total: torch.Tensor | None
    q_total: torch.Tensor
    ratio_total: torch.Tensor
    actual_total: torch.Tensor
    remainder_total: torch.Tensor
    defined: bool  # False: the total ratio is NaN (Δp̃ = 0) or R is +inf; see reason
    reason: str

    def __post_init__(self) -> None:
        check_objective(self.objective)
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1], got {self.alpha}")
        shape = self.phi.shape
        for name in (*_TENSOR_FIELDS, "phi_autograd"):
            value = getattr(self, name)
            if value is not None and (value.ndim != 1 or value.shape != shape):
                raise ValueError(f"{name} must have shape {tuple(shape)}, got {tuple(value.shape)}")

    @property
    def num_chunks(self) -> int:
        """K."""
        return int(self.phi.shape[0])


def _kl(p: torch.Tensor, log_p: torch.Tensor, log_q: torch.Tensor) -> torch.Tensor:
    """Σ p (log p − log q) with 0·log 0 = 0 and +inf where q misses mass of p.

    The lean form of ``divergences.kl`` (one ``where``, no clamp, so R differences are not
    biased by clamping) for large probe arrays.
    """
    return torch.where(p > 0, p * (log_p - log_q), torch.zeros_like(p)).sum(-1)


def _target(p_prev: torch.Tensor, p_y: torch.Tensor, alpha: float, objective: str) -> torch.Tensor:
    """log g_k (paper) or m_k (implemented) from the upstream readout p_{k-1}."""
    if objective == "paper":
        return geometric_target(p_y, p_prev, alpha)[0]
    return arithmetic_target(p_y, p_prev, alpha)


def _divergence(
    target: torch.Tensor, p_k: torch.Tensor, log_p_k: torch.Tensor, objective: str
) -> torch.Tensor:
    """D_k per position from a target made by ``_target``."""
    if objective == "paper":
        return _kl(p_k, log_p_k, target)
    return _kl(target, torch.log(target), log_p_k)


def chunk_divergence(
    p_prev: torch.Tensor, p_k: torch.Tensor, p_y: torch.Tensor, alpha: float, objective: Objective
) -> torch.Tensor:
    """D_k per position: KL(p_k ‖ g_k(p_{k-1})) (paper) or KL(m_k(p_{k-1}) ‖ p_k) (implemented)."""
    check_objective(objective)
    return _divergence(_target(p_prev, p_y, alpha, objective), p_k, torch.log(p_k), objective)


def _closed_form_grad(
    target: torch.Tensor,
    p_prev: torch.Tensor,
    p_k: torch.Tensor,
    log_p_k: torch.Tensor,
    alpha: float,
    objective: str,
) -> torch.Tensor:
    """∂D_k/∂p_{k-1} per position and coordinate (the 1/N is applied by the caller)."""
    if alpha == 1.0:  # the targets do not depend on p_{k-1}
        return torch.zeros_like(p_prev)
    if objective == "paper":
        return (1.0 - alpha) * (target.exp() - p_k) / p_prev
    return (1.0 - alpha) * (torch.log(target) - log_p_k + 1.0)


def _inner(grad: torch.Tensor, delta: torch.Tensor) -> torch.Tensor:
    """Σ grad·Δ over all coordinates, with coordinates where Δ = 0 contributing exactly 0."""
    return torch.where(delta == 0, torch.zeros_like(grad), grad * delta).sum()


def _autograd_phi(
    prev: torch.Tensor,
    delta: torch.Tensor,
    p_k: torch.Tensor,
    p_y: torch.Tensor,
    alpha: float,
    objective: str,
) -> torch.Tensor:
    """φ_k by autograd through the definition of R_k (the check on the closed form)."""
    leaf = prev.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        r = chunk_divergence(leaf, p_k, p_y, alpha, objective).mean()
        if not r.requires_grad:  # α = 1: the target does not depend on p_{k-1}
            return torch.zeros((), dtype=prev.dtype, device=prev.device)
        (grad,) = torch.autograd.grad(r, leaf)
    return _inner(grad, delta)


def _ratio(phi: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
    """max(φ, 0)/q; NaN where q = 0 (and φ finite)."""
    undefined = (q == 0) & torch.isfinite(phi)
    safe = torch.where(q == 0, torch.ones_like(q), q)
    return torch.where(undefined, torch.full_like(phi, math.nan), phi.clamp_min(0.0) / safe)


def _assemble(rows: dict[str, torch.Tensor | None], alpha: float, objective: str) -> StabilityTerms:
    """Per-chunk and total terms, with +inf (never NaN) wherever R is infinite."""
    r_b, r_a, phi, auto, dp = (rows[n] for n in ("r_before", "r_after", "phi", "auto", "q"))
    infinite = ~torch.isfinite(r_b) | ~torch.isfinite(r_a)
    inf = torch.tensor(math.inf, dtype=torch.float64, device=phi.device)

    def flag(x: torch.Tensor) -> torch.Tensor:
        return torch.where(infinite, inf, x)

    phi, auto = flag(phi), None if auto is None else flag(auto)
    actual = flag(r_a - r_b)
    any_inf = bool(infinite.any())
    phi_total = inf if any_inf else phi.sum()
    actual_total = inf if any_inf else r_a.sum() - r_b.sum()
    dp_total = dp.sum()
    if any_inf:
        chunks = [k + 1 for k in infinite.nonzero().flatten().tolist()]
        what = (
            "KL(p_k || g_k) with g_k = 0 where p_k > 0 (one-hot p_y: use label smoothing epsilon > 0)"
            if objective == "paper"
            else "KL(m_k || p_k) with p_k = 0 where m_k > 0"
        )
        reason = f"R is +inf for chunk(s) {chunks}: {what}"
    elif not bool(torch.isfinite(phi_total)):
        reason = "the first-order term is not finite (zero upstream probabilities)"
    elif float(dp_total) == 0.0:
        reason = "the upstream readouts did not change (Δp̃ = 0): the ratio is undefined"
    else:
        reason = ""
    return StabilityTerms(
        objective=objective,
        alpha=alpha,
        r_before=r_b,
        r_after=r_a,
        phi=phi,
        phi_autograd=auto,
        q=dp,
        ratio=flag(_ratio(phi, dp)),
        actual=actual,
        remainder=flag(actual - phi),
        r_before_total=r_b.sum(),
        r_after_total=r_a.sum(),
        phi_total=phi_total,
        phi_autograd_total=None if auto is None else (inf if any_inf else auto.sum()),
        q_total=dp_total,
        ratio_total=inf if any_inf else _ratio(phi_total, dp_total),
        actual_total=actual_total,
        remainder_total=inf if any_inf else actual_total - phi_total,
        defined=not reason,
        reason=reason,
    )


def _to64(x: torch.Tensor, log_input: bool) -> torch.Tensor:
    x = x.detach().to(torch.float64)
    return x.exp() if log_input else x


def stability_terms(
    p_tilde_t: torch.Tensor,
    p_tilde_next: torch.Tensor,
    p_out: torch.Tensor,
    p_y: torch.Tensor,
    alpha: float,
    objective: Objective,
    *,
    log_input: bool = False,
    check_autograd: bool = False,
) -> StabilityTerms:
    """Assumption 5 terms for one step from [K, N, V] readouts (see the module docstring).

    ``p_tilde_t``/``p_tilde_next``: p_0..p_{K-1} at steps t and t+1; ``p_out``: p_1..p_K at
    ω^t; ``p_y`` [N, V] (or broadcastable), label-smoothed for the paper objective.
    ``log_input=True``: all four hold log-probabilities. ``check_autograd=True`` adds φ by
    autograd (one small graph per chunk). Runs on the inputs' device, one chunk at a time.
    """
    check_objective(objective)
    if not 0.0 <= float(alpha) <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
    alpha = float(alpha)
    if p_tilde_t.ndim != 3 or not p_tilde_t.shape == p_tilde_next.shape == p_out.shape:
        raise ValueError(
            "p_tilde_t, p_tilde_next and p_out must share one [K, N, V] shape, got "
            f"{tuple(p_tilde_t.shape)}, {tuple(p_tilde_next.shape)}, {tuple(p_out.shape)}"
        )
    y = _to64(p_y, log_input).expand(p_tilde_t.shape[1:])
    rows: dict[str, list[torch.Tensor]] = {
        n: [] for n in ("r_before", "r_after", "phi", "auto", "q")
    }
    for k in range(p_tilde_t.shape[0]):
        prev, nxt, out = (_to64(x[k], log_input) for x in (p_tilde_t, p_tilde_next, p_out))
        log_out = p_out[k].detach().to(torch.float64) if log_input else torch.log(out)
        delta = nxt - prev
        target = _target(prev, y, alpha, objective)
        grad = _closed_form_grad(target, prev, out, log_out, alpha, objective)
        rows["r_before"].append(_divergence(target, out, log_out, objective).mean())
        target = _target(nxt, y, alpha, objective)
        rows["r_after"].append(_divergence(target, out, log_out, objective).mean())
        rows["phi"].append(_inner(grad, delta) / prev.shape[0])
        rows["q"].append(delta.pow(2).sum() / prev.shape[0])
        if check_autograd:
            rows["auto"].append(_autograd_phi(prev, delta, out, y, alpha, objective))
    stacked = {name: torch.stack(v) if v else None for name, v in rows.items()}
    return _assemble(stacked, alpha, objective)


@dataclass(frozen=True)
class FirstOrderTotals:
    """The totals of ``StabilityTerms`` that step scaling logs: φ, q, ρ (float64 scalars) and ``defined``."""

    phi_total: torch.Tensor
    q_total: torch.Tensor
    ratio_total: torch.Tensor
    defined: bool


def _totals(terms: StabilityTerms) -> FirstOrderTotals:
    return FirstOrderTotals(terms.phi_total, terms.q_total, terms.ratio_total, terms.defined)


def _infinite_at(p_prev: torch.Tensor, p_k: torch.Tensor, p_y: torch.Tensor, alpha: float, objective: str) -> bool:
    """Whether R_k(p_{k-1}) is +inf (or NaN), without computing it: exactly when ``_divergence`` is
    (for inputs without NaN; ``first_order_totals`` sends those to ``stability_terms``).

    Paper: log g_k = α log p_y + (1−α) log p_{k-1} − log Z is −inf where a factor with a positive
    exponent is 0, and KL(p_k ‖ g_k) is then +inf where p_k > 0. Implemented: m_k > 0 where
    p_k = 0 gives +inf. (A row with g_k = 0 everywhere gives NaN; it has p_k > 0 at a −inf
    coordinate too, so it is caught by the same test.) For readouts within [0, 1]; ``FirstOrder``
    sends any other after to ``_divergence`` itself.
    """
    if objective == "paper":
        zero = torch.zeros_like(p_prev, dtype=torch.bool)
        if alpha < 1.0:
            zero |= p_prev == 0
        if alpha > 0.0:
            zero |= (p_y == 0).expand_as(p_prev)
        return bool((zero & (p_k > 0)).any())
    positive = arithmetic_target(p_y, p_prev, alpha) > 0  # rounded as _divergence rounds it (an underflow is 0)
    return bool((positive & (p_k == 0)).any())


def in_readout_range(x: torch.Tensor) -> torch.Tensor:
    """0-d bool: every entry of ``x`` lies in (0, 1], a readout's range with no zero (False with a NaN)."""
    return (x.amin() > 0) & (x.amax() <= 1.0)


class FirstOrder:
    """``stability_terms``' φ, q, ρ totals and ``defined`` at one ω^t against any number of afters,
    bit for bit (``totals``). Step scaling evaluates one ω^t against many ω^t + c·d, in several
    directions: the target at p̃^t, the gradient of R and R's finiteness there are computed once
    per chunk, here, and R at each after within [0, 1] is not computed at all (only whether it is
    finite, by ``_infinite_at``, skipped where the inputs' signs settle it: every output at ω^t
    positive for ``implemented``; every after and, with α > 0, every p_y positive for ``paper``);
    an after with an entry above 1 (or +inf) has R computed to tell.

    Probabilities in, float64, without NaN (``first_order_totals`` sends NaN inputs to
    ``stability_terms``).
    """

    def __init__(self, p_tilde_t: torch.Tensor, p_out: torch.Tensor, p_y: torch.Tensor, alpha: float,
                 objective: Objective) -> None:
        check_objective(objective)
        alpha = float(alpha)
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
        if p_tilde_t.ndim != 3 or p_out.shape != p_tilde_t.shape:
            raise ValueError("p_tilde_t and p_out must share one [K, N, V] shape")
        self.shape, self.alpha, self.objective = p_tilde_t.shape, alpha, objective
        self.y = _to64(p_y, False).expand(p_tilde_t.shape[1:])
        self.y_positive = alpha == 0.0 or bool(self.y.amin() > 0)
        self.chunks = []
        for k in range(p_tilde_t.shape[0]):
            prev, out = _to64(p_tilde_t[k], False), _to64(p_out[k], False)
            log_out = torch.log(out)
            target = _target(prev, self.y, alpha, objective)
            grad = _closed_form_grad(target, prev, out, log_out, alpha, objective)
            infinite = not bool(torch.isfinite(_divergence(target, out, log_out, objective).mean()))
            grad_finite, out_positive = torch.stack([torch.isfinite(grad).all(), out.amin() > 0]).tolist()
            self.chunks.append((prev, out, grad, infinite, out_positive, grad_finite))

    def _infinite(self, nxt: torch.Tensor, out: torch.Tensor, out_positive: bool, positive: bool,
                  bounded: bool) -> bool:
        """Whether R at the after ``nxt`` (chunk k) is infinite; ``positive``/``bounded``: every entry of
        ``nxt`` is > 0 / ≤ 1, read once per after and chunk for every objective."""
        if not bounded:  # outside the readouts' range (+inf, overflow): R by its definition
            target = _target(nxt, self.y, self.alpha, self.objective)
            return not bool(torch.isfinite(_divergence(target, out, torch.log(out), self.objective).mean()))
        if self.objective == "implemented" and out_positive:
            return False
        if self.objective == "paper" and self.y_positive and positive:
            return False
        return _infinite_at(nxt, out, self.y, self.alpha, self.objective)

    def totals(self, p_tilde_after: Sequence[torch.Tensor]) -> list[FirstOrderTotals]:
        """The totals at every after ([K, N, V] probabilities each), in order."""
        return shared_totals([self], p_tilde_after)[0]


def shared_totals(orders: Sequence[FirstOrder], p_tilde_after: Sequence[torch.Tensor]) -> list[list[FirstOrderTotals]]:
    """Each ``FirstOrder``'s totals at every after, in order; Δ = after − p̃^t and q computed once for
    all of them (they must be built on the same p̃^t, e.g. one per objective). Where the gradient at
    ω^t is finite everywhere, Σ grad·Δ is summed without ``_inner``'s mask: the masked coordinates
    (Δ = 0) then add ±0, the same sum. Each after's range (> 0, ≤ 1) is read once per chunk for all
    of them."""
    afters = list(p_tilde_after)
    if not orders:
        return []
    shape = orders[0].shape
    if any(o.shape != shape for o in orders) or any(a.shape != shape for a in afters):
        raise ValueError("p_tilde_t, every p_tilde_after and p_out must share one [K, N, V] shape")
    phi = [[[] for _ in afters] for _ in orders]
    q: list[list[torch.Tensor]] = [[] for _ in afters]
    infinite = [[False] * len(afters) for _ in orders]
    for k in range(shape[0]):
        prev = orders[0].chunks[k][0]
        for i, after in enumerate(afters):
            nxt = _to64(after[k], False)
            delta = nxt - prev
            q[i].append(delta.pow(2).sum() / prev.shape[0])
            positive, bounded = torch.stack([nxt.amin() > 0, nxt.amax() <= 1.0]).tolist()
            for j, order in enumerate(orders):
                _, out, grad, before_infinite, out_positive, grad_finite = order.chunks[k]
                inner = (grad * delta).sum() if grad_finite else _inner(grad, delta)
                phi[j][i].append(inner / prev.shape[0])
                infinite[j][i] |= before_infinite or order._infinite(nxt, out, out_positive, positive, bounded)
    inf = torch.tensor(math.inf, dtype=torch.float64, device=orders[0].y.device)
    q_totals = [torch.stack(row).sum() for row in q]
    result = []
    for j in range(len(orders)):
        totals = []
        for i, q_total in enumerate(q_totals):
            phi_total = torch.stack(phi[j][i]).sum()
            if infinite[j][i]:
                totals.append(FirstOrderTotals(inf, q_total, inf, False))
                continue
            defined = bool(torch.isfinite(phi_total)) and float(q_total) != 0.0
            totals.append(FirstOrderTotals(phi_total, q_total, _ratio(phi_total, q_total), defined))
        result.append(totals)
    return result


def first_order_totals(
    p_tilde_t: torch.Tensor,
    p_tilde_after: Sequence[torch.Tensor],
    p_out: torch.Tensor,
    p_y: torch.Tensor,
    alpha: float,
    objective: Objective,
) -> list[FirstOrderTotals]:
    """``stability_terms(p_tilde_t, after, p_out, p_y, alpha, objective)``'s φ, q, ρ totals and
    ``defined`` for every ``after`` in ``p_tilde_after``, bit for bit, at a fraction of the cost
    (``FirstOrder``). Probabilities in, float64; inputs with a NaN take ``stability_terms`` itself.
    """
    check_objective(objective)
    if not 0.0 <= float(alpha) <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
    afters = list(p_tilde_after)
    if p_tilde_t.ndim != 3 or any(a.shape != p_tilde_t.shape for a in afters) or p_out.shape != p_tilde_t.shape:
        raise ValueError("p_tilde_t, every p_tilde_after and p_out must share one [K, N, V] shape")
    if any(bool(torch.isnan(x).any()) for x in (p_tilde_t, p_out, p_y, *afters)):  # NaN: the definition, not the shortcut
        return [_totals(stability_terms(p_tilde_t, a, p_out, p_y, alpha, objective)) for a in afters]
    return FirstOrder(p_tilde_t, p_out, p_y, alpha, objective).totals(afters)
