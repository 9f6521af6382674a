"""Lemma 2's fixed point: the known-answer catalogue (``analyses.lemma2.fixed_point``; docs/LEMMA2.md).

Each construction says where the CE arm's "reached" readout p^F and the reverse arm's p^R lie,
relative to the start p^0, on a synthetic batch whose answer is known, and states the truth per
arm (``ARM_OUTCOMES``) and for the row. The records go through the row's own code
(``reached``, ``fixed_point_decision``), so a test that reads a construction's outcomes reads
what the row would print.

A batch (``synthetic_batch``): ``N`` positions, vocabulary ``V``, labels drawn uniformly,
p_{k−1} = softmax(spread·z), the start p^0 = softmax(log p_{k−1} + noise·z'), α = ``ALPHA``,
ε = ``EPS``; targets m_k and g_k from the true labels. ``SHAPES``: "peaked" (spread 2, noise 2)
and "nearly uniform" (spread 0.3, noise 0.5, as p_0 is on the package's runs).

The moves: ``toward(t, λ)`` = (1−λ)·p^0 + λ·t for t ∈ {m_k, g_k}; ``optimum(t)`` = t exactly;
``label_free(kind, s)``: from p^0 toward p_{k−1}, arithmetic for the CE arm and geometric for the
reverse arm, no label used (the same move whatever the labels); ``toward_relabelled(t, λ)``: toward
the target of the labels permuted among the positions (a training on relabelled inputs);
``stays``: p^0 itself; ``jitter``: p^0 redrawn by label-free log-noise.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from analyses.lemma2.fixed_point import (
    ARM_OUTCOMES,
    FixedPointResult,
    FixedPointSeed,
    fixed_point_decision,
    label_free_move,
    label_permutations,
    reached,
)
from zerolock_theory.theory.lemma2 import readout_distances
from zerolock_theory.theory.targets import (
    arithmetic_target,
    geometric_target,
    label_smooth,
    one_hot,
)

__all__ = ["ALPHA", "CONSTRUCTIONS", "POWER", "EPS", "N", "SEEDS", "SHAPES", "V", "Batch", "Construction", "Move",
           "construction", "decide", "jitter", "label_free", "optimum", "seed_records", "shares", "stays",
           "synthetic_batch", "toward", "toward_relabelled"]

N, V, ALPHA, EPS, SEEDS = 48, 64, 0.5, 0.1, 5
SHAPES: dict[str, tuple[float, float]] = {"peaked": (2.0, 2.0), "nearly uniform": (0.3, 0.5)}
"""(logit scale of p_{k−1}, log-noise of the start p^0)."""
OWN, OTHER, NONE, UNTESTABLE = ARM_OUTCOMES


@dataclass(frozen=True)
class Batch:
    """One seed's synthetic batch: log p_{k−1}, log p^0, labels, the true labels' targets m_k, g_k."""

    seed: int
    log_prev: torch.Tensor
    log_start: torch.Tensor
    labels: torch.Tensor
    m: torch.Tensor
    g: torch.Tensor

    def target(self, name: str, labels: torch.Tensor | None = None) -> torch.Tensor:
        """m_k ("m") or g_k ("g") from ``labels`` (default: the batch's own)."""
        if labels is None:
            return self.m if name == "m" else self.g
        p_y, prev = label_smooth(one_hot(labels, V, torch.float64), EPS), self.log_prev.exp()
        return arithmetic_target(p_y, prev, ALPHA) if name == "m" else geometric_target(p_y, prev, ALPHA)[0].exp()


Move = Callable[[Batch], torch.Tensor]
"""A batch → the reached log-readout [N, V]."""


def synthetic_batch(seed: int, shape: str = "peaked") -> Batch:
    """The batch of ``seed`` at ``SHAPES[shape]`` (module docstring)."""
    spread, noise = SHAPES[shape]
    g = torch.Generator().manual_seed(seed)
    log_prev = torch.log_softmax(spread * torch.randn(N, V, generator=g, dtype=torch.float64), -1)
    log_start = torch.log_softmax(log_prev + noise * torch.randn(N, V, generator=g, dtype=torch.float64), -1)
    labels = torch.randint(V, (N,), generator=g)
    p_y = label_smooth(one_hot(labels, V, torch.float64), EPS)
    m = arithmetic_target(p_y, log_prev.exp(), ALPHA)
    g_k = geometric_target(p_y, log_prev.exp(), ALPHA)[0].exp()
    return Batch(seed, log_prev, log_start, labels, m, g_k)


def toward(name: str, lam: float) -> Move:
    """(1−λ)·p^0 + λ·t, t = m_k or g_k."""
    return lambda b: ((1.0 - lam) * b.log_start.exp() + lam * b.target(name)).log()


def optimum(name: str) -> Move:
    """The target itself: the training reached its loss's minimizer (or the other's)."""
    return lambda b: b.target(name).log()


def label_free(kind: str, step: float) -> Move:
    """From p^0 toward p_{k−1} by ``step``, "arithmetic" or "geometric": no label used."""
    return lambda b: label_free_move(b.log_start, b.log_prev, step, kind)


def toward_relabelled(name: str, lam: float) -> Move:
    """(1−λ)·p^0 + λ·t̃, t̃ the target of the labels permuted among the positions (a seeded permutation)."""
    def move(b: Batch) -> torch.Tensor:
        perm = torch.randperm(N, generator=torch.Generator().manual_seed(99 + b.seed))
        return ((1.0 - lam) * b.log_start.exp() + lam * b.target(name, b.labels[perm])).log()
    return move


def stays() -> Move:
    """p^0 itself: the training did not move."""
    return lambda b: b.log_start.clone()


def jitter(scale: float, salt: int) -> Move:
    """p^0 with label-free log-noise of ``scale`` (seeded by the batch and ``salt``): moved, but not by labels."""
    def move(b: Batch) -> torch.Tensor:
        gen = torch.Generator().manual_seed(7_919 * b.seed + salt)
        return torch.log_softmax(b.log_start + scale * torch.randn(N, V, generator=gen, dtype=torch.float64), -1)
    return move


@dataclass(frozen=True)
class Construction:
    """Where each arm moves, and the truth: per arm (CE, reverse) and for the row."""

    name: str
    forward: Move
    reverse: Move
    truth: tuple[str, str]  # (CE arm, reverse arm), words of ARM_OUTCOMES
    row: str  # the row's word (``fixed_point.OUTCOMES``)
    shape: str = "peaked"


CONSTRUCTIONS: tuple[Construction, ...] = (
    Construction("CE -> m_k, reverse -> g_k (80%)", toward("m", 0.8), toward("g", 0.8), (OWN, OWN),
                 "each loss moves toward its own optimum"),
    Construction("both -> m_k (CE 60%, reverse 40%)", toward("m", 0.6), toward("m", 0.4), (OWN, OTHER),
                 "both move toward m_k"),
    Construction("both -> g_k (80%)", toward("g", 0.8), toward("g", 0.8), (OTHER, OWN), "both move toward g_k"),
    Construction("CE -> g_k, reverse -> m_k (80%)", toward("g", 0.8), toward("m", 0.8), (OTHER, OTHER), "opposite"),
    Construction("CE -> m_k (60%), reverse: label-free noise", toward("m", 0.6), jitter(0.3, 2), (OWN, NONE),
                 "one arm decided"),
    Construction("neither moves: label-free noise about p^0", jitter(0.3, 1), jitter(0.3, 2), (NONE, NONE),
                 "no difference detected"),
    Construction("neither moves: both stay at p^0", stays(), stays(), (UNTESTABLE, UNTESTABLE), "not testable"),
    Construction("label-free moves toward p_(k-1), s = 1/2", label_free("arithmetic", 0.5),
                 label_free("geometric", 0.5), (NONE, NONE), "no difference detected"),
    Construction("label-free moves toward p_(k-1), s = 0.9", label_free("arithmetic", 0.9),
                 label_free("geometric", 0.9), (NONE, NONE), "no difference detected"),
    Construction("exact optima: p^F = m_k, p^R = g_k", optimum("m"), optimum("g"), (OWN, OWN),
                 "each loss moves toward its own optimum"),
    Construction("exact optima swapped: p^F = g_k, p^R = m_k", optimum("g"), optimum("m"), (OTHER, OTHER),
                 "opposite"),
    Construction("relabelled inputs: toward the permuted labels' m_k, g_k (50%)", toward_relabelled("m", 0.5),
                 toward_relabelled("g", 0.5), (NONE, NONE), "no difference detected"),
    Construction("exact optima, nearly uniform p_(k-1)", optimum("m"), optimum("g"), (OWN, OWN),
                 "each loss moves toward its own optimum", "nearly uniform"),
    Construction("both -> m_k (60%), nearly uniform p_(k-1)", toward("m", 0.6), toward("m", 0.6), (OWN, OTHER),
                 "both move toward m_k", "nearly uniform"),
    Construction("both -> g_k (90%), nearly uniform p_(k-1)", toward("g", 0.9), toward("g", 0.9), (OTHER, OWN),
                 "both move toward g_k", "nearly uniform"),
    Construction("label-free moves toward p_(k-1), s = 1/2, nearly uniform p_(k-1)", label_free("arithmetic", 0.5),
                 label_free("geometric", 0.5), (NONE, NONE), "no difference detected", "nearly uniform"),
)
"""The catalogue the rule must read: each construction's truth per arm in at least 90% of seeded groups."""

POWER: tuple[Construction, ...] = (
    Construction("both -> m_k (CE 60%, reverse 20%)", toward("m", 0.6), toward("m", 0.2), (OWN, OTHER),
                 "both move toward m_k"),
    Construction("CE -> m_k, reverse -> g_k (30%)", toward("m", 0.3), toward("g", 0.3), (OWN, OWN),
                 "each loss moves toward its own optimum"),
    Construction("both -> g_k (CE 20%, reverse 60%)", toward("g", 0.2), toward("g", 0.6), (OTHER, OWN),
                 "both move toward g_k"),
    Construction("CE -> m_k, reverse -> g_k (60%), nearly uniform p_(k-1)", toward("m", 0.6), toward("g", 0.6),
                 (OWN, OWN), "each loss moves toward its own optimum", "nearly uniform"),
    Construction("both -> m_k (CE 60%, reverse 20%), nearly uniform p_(k-1)", toward("m", 0.6), toward("m", 0.2),
                 (OWN, OTHER), "both move toward m_k", "nearly uniform"),
)
"""Smaller moves whose truth is stated but which the rule may miss (its power; docs/LEMMA2.md): a
partial move toward g_k is mostly a flattening of p_{k−1}, which a label-free move also makes, so its
label part is small, and smaller still near a uniform p_{k−1}."""


def construction(name: str) -> Construction:
    """The catalogue's construction called ``name``."""
    for c in CONSTRUCTIONS + POWER:
        if c.name == name:
            return c
    raise KeyError(f"no construction {name!r} (known: {', '.join(c.name for c in CONSTRUCTIONS)})")


def seed_records(c: Construction, group: int = 0, n_seeds: int = SEEDS, null: bool = True) -> list[FixedPointSeed]:
    """The per-seed records of ``c``'s group ``group`` (batch seeds 1000·group + 0..n_seeds−1), each
    reached readout with the label-permutation null (``null``) as the controls record it."""
    out = []
    for s in range(1000 * group, 1000 * group + n_seeds):
        b = synthetic_batch(s, c.shape)
        permuted = label_permutations(b.labels, s) if null else ()
        rec = {d: reached(d, b.log_prev, b.log_start, move(b), b.labels, ALPHA, EPS, permuted=permuted)
               for d, move in (("forward", c.forward), ("reverse", c.reverse))}
        start = readout_distances(b.log_prev, b.log_start, b.labels, ALPHA, EPS)
        out.append(FixedPointSeed(s, rec["forward"], rec["reverse"], float(start["tv_m"].mean()),
                                  float(start["tv_g"].mean()), float(start["tv_m_g"].mean())))
    return out


def decide(c: Construction, group: int = 0, n_seeds: int = SEEDS, null: bool = True,
           level: float = 0.95) -> FixedPointResult:
    """The row's decision on ``c``'s group ``group``."""
    return fixed_point_decision(seed_records(c, group, n_seeds, null), 1, ALPHA, EPS, level)


def shares(c: Construction, groups: Sequence[int], n_seeds: int = SEEDS) -> dict[str, float]:
    """Over seeded groups: the share whose CE arm, reverse arm, both arms and row word read the truth, and
    the share where some arm reads a direction the truth does not have ("wrong direction": a decided arm
    whose word differs from its truth)."""
    hits = {"CE arm": 0, "reverse arm": 0, "both arms": 0, "row": 0, "wrong direction": 0}
    for group in groups:
        found = decide(c, group, n_seeds)
        arms = (found.forward_arm.outcome, found.reverse_arm.outcome)
        hits["CE arm"] += arms[0] == c.truth[0]
        hits["reverse arm"] += arms[1] == c.truth[1]
        hits["both arms"] += arms == c.truth
        hits["row"] += found.outcome == c.row
        hits["wrong direction"] += any(a in (OWN, OTHER) and a != t for a, t in zip(arms, c.truth, strict=True))
    return {name: count / len(groups) for name, count in hits.items()}
