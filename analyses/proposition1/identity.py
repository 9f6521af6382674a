"""Proposition 1 as algebra: what the losses imply, and the transcription's counterexample.

docs/MATH.md, "Proposition 1 and depth". With δ_k = ℓ_k(p_k) − min ℓ_k and the loss's own
target t = p_y^ε (label smoothing ε, V tokens), for EVERY pair of readouts p_{k-1}, p_k and α ∈ (0, 1]:

* forward: α·(CE(t, p_{k-1}) + δ_k/α − CE(t, p_k)) = [ℓ^F_k(p_{k-1}) − min ℓ^F_k] + (1−α)·KL(p_{k-1} ‖ p_k);
* reverse: α·(KL(p_{k-1} ‖ t) + δ_k/α − KL(p_k ‖ t)) = [ℓ^R_k(p_{k-1}) − min ℓ^R_k] + (1−α)·KL(p_k ‖ p_{k-1}).

Both right sides are ≥ 0 (a gap to the minimizer and a KL), hence CE_k ≤ CE_{k-1} + δ_k/α
(forward) and KL(p_k ‖ t) ≤ KL(p_{k-1} ‖ t) + δ_k/α (reverse). These are identities of the
definitions (sympy: ``zerolock_theory.theory.symbolic.proposition1_slack``): no run can violate
them, and a count over a run is not evidence about ZeroLock (principle 4).

``implied_slack`` computes both sides for readouts (float64, any batch); ``proposition1_identity``
checks them on a seeded grid (both directions, α ∈ ``ALPHAS``, ε ∈ ``EPSILONS``, V ∈ ``VOCABS``,
random readouts plus the adversarial cases: p_k exactly at the optimum, δ_k = 0, and confident
p_{k-1}) and evaluates the transcription CE_k ≤ CE_{k-1} + δ_k (task CE, gap unscaled) on its
counterexample (``transcription_counterexample``): a reverse chunk exactly at g_k (δ_k = 0) after
p_{k-1}(y) = 0.99 > t(y) has CE_k > CE_{k-1}.

Outcome (``IDENTITY_OUTCOMES``): "holds as an identity; as transcribed, false" when every case
satisfies the implied inequality (within ``IDENTITY_TOL``) and the counterexample breaks the
transcription; "holds as an identity" if the transcription were not broken; "fails" if a case
broke the implied inequality (a bug in the losses: the algebra cannot fail).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from analyses.results import Result, declare, register
from zerolock_theory.theory.divergences import cross_entropy, kl
from zerolock_theory.theory.losses import local_loss
from zerolock_theory.theory.targets import (
    arithmetic_target,
    geometric_target,
    label_smooth,
    one_hot,
)

__all__ = ["ALPHAS", "EPSILONS", "IDENTITY_OUTCOMES", "IDENTITY_TOL", "VOCABS", "ImpliedCheck", "Proposition1Identity",
           "Slack", "Transcription", "implied_slack", "proposition1_identity", "transcription_counterexample"]

IDENTITY_OUTCOMES: tuple[str, ...] = ("holds as an identity; as transcribed, false", "holds as an identity", "fails")
IDENTITY_TOL = 1e-9
"""Nats: float64 round-off allowed in the implied inequality and in the slack identity."""
ALPHAS: tuple[float, ...] = (0.05, 0.25, 0.5, 0.75, 1.0)
EPSILONS: tuple[float, ...] = (0.0, 0.01, 0.1, 0.3)  # ε = 0 only forward (the reverse loss needs ε > 0)
VOCABS: tuple[int, ...] = (2, 5, 64)
CASES = 64
"""Random readout pairs per (direction, α, ε, V), besides the adversarial ones."""


@dataclass(frozen=True)
class Slack:
    """Both sides of the implied inequality, per row: task_{k-1}, task_k, δ_k and the identity's
    right side (gap of p_{k-1} + (1−α)·KL), whose value equals α·(task_{k-1} + δ_k/α − task_k)."""

    task_prev: torch.Tensor
    task: torch.Tensor
    delta: torch.Tensor
    rhs: torch.Tensor

    def violation(self, alpha: float) -> torch.Tensor:
        """task_k − task_{k-1} − δ_k/α: ≤ 0 where the implied inequality holds."""
        return self.task - self.task_prev - self.delta / alpha

    def residual(self, alpha: float) -> torch.Tensor:
        """|α·(task_{k-1} + δ_k/α − task_k) − rhs|: 0 up to round-off (the identity)."""
        return (alpha * (self.task_prev - self.task) + self.delta - self.rhs).abs()


def implied_slack(direction: str, p_prev: torch.Tensor, p: torch.Tensor, target: torch.Tensor,
                  alpha: float) -> Slack:
    """``Slack`` of readouts p_{k-1} → p_k ([..., V] probabilities) for the loss with target t."""
    if not 0.0 < alpha <= 1.0:
        raise ValueError(f"alpha must lie in (0, 1] (delta_k/alpha), got {alpha}")
    p_prev, p, target = (x.double() for x in (p_prev, p, target))
    if direction == "forward":
        best = arithmetic_target(target, p_prev, alpha)
        task_prev, task, drift = cross_entropy(target, p_prev), cross_entropy(target, p), kl(p_prev, p)
    else:
        best = geometric_target(target, p_prev, alpha)[0].exp()
        task_prev, task, drift = kl(p_prev, target), kl(p, target), kl(p, p_prev)
    floor = local_loss(best, target, p_prev, alpha, direction)
    delta = local_loss(p, target, p_prev, alpha, direction) - floor
    gap_prev = local_loss(p_prev, target, p_prev, alpha, direction) - floor
    drift_term = torch.zeros_like(drift) if alpha == 1.0 else (1.0 - alpha) * drift  # 0·inf = 0 at α = 1
    return Slack(task_prev, task, delta, gap_prev + drift_term)


@dataclass(frozen=True)
class ImpliedCheck:
    """One direction over the grid: cases, the largest violation of the implied inequality, the
    largest residual of the slack identity, the smallest slack, and the cases with δ_k = 0."""

    direction: str
    cases: int
    max_violation: float
    max_residual: float
    at_optimum: int

    @property
    def holds(self) -> bool:
        return self.max_violation <= IDENTITY_TOL and self.max_residual <= IDENTITY_TOL


@dataclass(frozen=True)
class Transcription:
    """The counterexample to CE_k ≤ CE_{k-1} + δ_k: a reverse chunk at g_k after a confident p_{k-1}."""

    epsilon: float
    alpha: float
    vocab: int
    p_prev_label: float
    ce_prev: float
    ce: float
    delta: float
    implied_violation: float  # KL(p_k ‖ t) − KL(p_{k-1} ‖ t) − δ_k/α: ≤ 0, the implied form holds

    @property
    def false(self) -> bool:
        """The transcription fails here: CE_k − CE_{k-1} > δ_k."""
        return self.ce - self.ce_prev - self.delta > IDENTITY_TOL


@register
@dataclass(frozen=True)
class Proposition1Identity(Result):
    """The analytic row: the implied identities checked per direction, and the transcription."""

    kind = "proposition1_identity"
    outcome: str
    forward: ImpliedCheck
    reverse: ImpliedCheck
    transcription: Transcription
    alphas: list[float]
    epsilons: list[float]
    vocabs: list[int]


IDENTITY = declare("proposition1_identity", Proposition1Identity)


def transcription_counterexample(epsilon: float = 0.1, alpha: float = 0.5, vocab: int = 2,
                                 p_prev_label: float = 0.99) -> Transcription:
    """The reverse chunk at its optimum g_k (δ_k = 0) after p_{k-1}(y) = ``p_prev_label`` (the rest
    spread evenly); task CE = CE(e_y, ·) with y = 0."""
    p_prev = torch.full((vocab,), (1.0 - p_prev_label) / (vocab - 1), dtype=torch.float64)
    p_prev[0] = p_prev_label
    target = label_smooth(one_hot(torch.tensor(0), vocab, torch.float64), epsilon)
    g = geometric_target(target, p_prev, alpha)[0].exp()
    slack = implied_slack("reverse", p_prev, g, target, alpha)
    return Transcription(epsilon, alpha, vocab, p_prev_label, float(-p_prev[0].log()), float(-g[0].log()),
                         float(slack.delta), float(slack.violation(alpha)))


def _readouts(gen: torch.Generator, n: int, vocab: int) -> torch.Tensor:
    """Log-uniform weights over 8 nats, normalized: entries over several orders of magnitude."""
    return torch.softmax(-8.0 * torch.rand(n, vocab, generator=gen, dtype=torch.float64), dim=-1)


def _check(direction: str, gen: torch.Generator) -> ImpliedCheck:
    cases, worst, residual, at_optimum = 0, -float("inf"), 0.0, 0
    for alpha in ALPHAS:
        for epsilon in EPSILONS:
            if direction == "reverse" and epsilon == 0.0:
                continue
            for vocab in VOCABS:
                labels = torch.randint(vocab, (CASES,), generator=gen)
                target = label_smooth(one_hot(labels, vocab, torch.float64), epsilon)
                p_prev = _readouts(gen, CASES, vocab)
                p_prev[: CASES // 4] = 0.01 / vocab + 0.99 * one_hot(labels[: CASES // 4], vocab, torch.float64)
                p = _readouts(gen, CASES, vocab)
                best = (arithmetic_target(target, p_prev, alpha) if direction == "forward"
                        else geometric_target(target, p_prev, alpha)[0].exp())
                p[: CASES // 2] = best[: CASES // 2]  # exact optima: δ_k = 0, half of them after a confident p_{k-1}
                slack = implied_slack(direction, p_prev, p, target, alpha)
                cases += CASES
                at_optimum += CASES // 2
                worst = max(worst, float(slack.violation(alpha).max()))
                residual = max(residual, float(slack.residual(alpha).max()))
    return ImpliedCheck(direction, cases, worst, residual, at_optimum)


def proposition1_identity(seed: int = 0) -> Proposition1Identity:
    """The analytic row's result (module docstring); deterministic for a ``seed``."""
    gen = torch.Generator().manual_seed(seed)
    forward, reverse = _check("forward", gen), _check("reverse", gen)
    counter = transcription_counterexample()
    if not (forward.holds and reverse.holds):
        outcome = "fails"
    else:
        outcome = IDENTITY_OUTCOMES[0] if counter.false else IDENTITY_OUTCOMES[1]
    return Proposition1Identity(outcome, forward, reverse, counter, list(ALPHAS), list(EPSILONS), list(VOCABS))
