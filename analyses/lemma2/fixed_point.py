"""Which target does training move toward? The fixed-point experiment's decision, one arm at a time
(docs/LEMMA2.md, row 4).

One chunk k is trained alone (the other chunks frozen) on a fixed batch, its inputs h_{k-1}
and readouts p_{k-1} computed once, with the forward (CE) loss ℓ^F_k and, separately from the
same start p^0 (chunk k's readout before training), with the reverse loss ℓ^R_k (ε > 0),
until the local loss stops falling (``zerolock_theory.app.workflows.fixed_point``). The CE arm's
own optimum is m_k, the reverse arm's g_k. Each arm is decided on its own.

The arm's statistic: the move's component along m_k − g_k. The move p^d − p^0 is fitted, least
squares pooled over positions, in probability space, on the directions toward the two targets and on
label-free directions (``move_coefficients``):

    p^d − p^0 ≈ x_d·(m_k − p^0) + y_d·(g_k − p^0) + Σ_l c_l·(q_l − p^0),

the q_l (``_free_points``) the points a move that uses no label heads for: q_λ ∝ p_{k-1}^λ for λ ∈
``FREE_POWERS`` and λ = 1 − α (uniform at λ = 0; g_k's label-free factor at 1 − α) and the tempered
starts (p^0)^{1/τ}, τ ∈ ``FREE_TEMPERATURES``, and the geometric midpoint ∝ (p^0)^{1/2}·q^{1/2} of
each (so that the curved geometric moves toward them lie close to the fitted directions). x_d − y_d is
the move's signed component along m_k − g_k once the label-free directions are taken out (> 0: toward
m_k rather than g_k). A move
toward a target is fitted exactly (x = λ, y = 0 toward m_k); a move toward a label-free point has
x = y = 0. The arm's statistic, > 0 toward its own optimum:

    B_F = x_F − y_F,        B_R = y_R − x_R.

Where m_k − p^0 and g_k − p^0 cannot be told apart once the label-free directions are taken out
(the start on the line through m_k and g_k, or m_k = g_k), the coefficients are NaN and the seed
carries no evidence.

The floor (per arm). Two things reach a component along m_k − g_k without using the labels: a
label-free move off the fitted directions (the geometric moves ∝ (p^0)^{1−s}·q^s and arithmetic ones
toward every q_l at s ∈ ``ARM_FLOOR_STEPS``: ``free_moves``), and chance overlap of a move with the
targets of any labelling (the reached readout fitted on the targets of ``NULL_PERMUTATIONS`` label
permutations). Per seed and arm the largest |x − y| of either (``Reached.along_floor``,
``Reached.along_permuted``); the arm's floor is its mean over the counted seeds, never below
``ALONG_FLOOR``.

The targets' least distance. When the mean TV(m_k, g_k) over the counted seeds is below
``MIN_TARGET_TV`` both arms read "not testable" with the reason ("targets closer than …"), at any α.

Label-blind guard. A readout that merely flattens (p^0 at some temperature) carries no label
information. Each reached readout is compared with its entropy-matched null p̃^d, the start p^0
at the temperature τ_d whose mean entropy equals that of p^d: the residual ρ_d = TV(p^d, p̃^d);
a seed counts only when ρ_F and ρ_R both exceed ``RESIDUAL_FLOOR`` (the others are listed as
label-blind).

Decision per arm (``ArmDecision``), over the counted seeds: the t-interval of B_d
(``analyses.stats.seeds.seed_interval``) and its p-value, the two-sided t-test of the mean against
the arm's floor on the side of the estimate (+floor above 0, −floor below; 1 when the estimate lies
within the floor), so each side is tested one-sided at half the level. Holm over the two arms: an
arm is decided when its Holm-adjusted p is below 1 − level: "toward its own optimum" (estimate > 0)
or "toward the other's" (estimate < 0); otherwise "no difference detected", with the least
detectable move floor + t_{1−(1−level)/4, n−1}·sd/√n (``least_detectable``: the least mean the
first Holm step decides at this noise); "not testable" with fewer than ``MIN_SEEDS`` counted seeds
with a defined statistic (``ArmDecision.reason`` says why).

Records written without the projection floor are decided on the TV change as they were measured:
D(p) = TV(p, m_k) − TV(p, g_k), E_d = D(p^d) − D(p^0), the label part A_F = −(E_F − Ẽ_F),
A_R = E_R − Ẽ_R against the permuted labels' targets (``statistic`` "label part", floor from the
label-free moves toward p_{k-1}, never below ``ARM_FLOOR``), or −E_F, E_R without them ("change").

The row's word follows from the two arms (``row_word``): both own → "each loss moves toward its
own optimum"; CE own and reverse the other's → "both move toward m_k"; CE the other's and reverse
own → "both move toward g_k"; both the other's → "opposite"; one arm decided → "one arm decided";
neither → "no difference detected"; no arm testable → "not testable". Its p-value (``p_value``,
for the table's multiplicity correction): the largest Holm-adjusted p of the decided arms (every
decided arm must hold), the smallest of the two when none is decided.

Progress (descriptive): x_F is the share of the way from p^0 to m_k the CE training went (1: reached
m_k), y_R the share of the way to g_k the reverse training went; they have a sign (a reverse training
that moved toward m_k has y_R ≈ 0 and x_R > 0).

Also descriptive: the contrast C = D_F − D_R (= E_F − E_R) over the counted seeds and C_label.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from scipy.stats import t as t_dist

from analyses.results import Interval, Result, declare_family, register
from analyses.stats.multiplicity import holm, t_test_p
from analyses.stats.seeds import MIN_SEEDS, seed_interval
from zerolock_theory.theory.lemma2 import (
    BLOCK_ELEMS,
    entropy_matching_temperature,
    readout_distances,
    temper,
)
from zerolock_theory.theory.targets import (
    arithmetic_target,
    geometric_target,
    label_smooth,
    one_hot,
)

__all__ = ["ALONG_FLOOR", "ARM_FLOOR", "ARM_FLOOR_STEPS", "ARM_OUTCOMES", "CONTRAST_FLOOR", "FREE_POWERS",
           "FREE_TEMPERATURES", "MIN_TARGET_TV", "NULL_PERMUTATIONS", "OUTCOMES", "RESIDUAL_FLOOR", "ArmDecision",
           "FixedPointResult", "FixedPointSeed", "Reached", "fixed_point_decision", "free_moves", "label_free_move",
           "label_permutations", "least_detectable", "move_coefficients", "reached", "row_word"]

ARM_OUTCOMES: tuple[str, ...] = ("toward its own optimum", "toward the other's", "no difference detected", "not testable")
"""One arm's outcome (the CE arm's own optimum is m_k, the reverse arm's g_k)."""
OUTCOMES: tuple[str, ...] = ("each loss moves toward its own optimum", "both move toward m_k", "both move toward g_k",
                             "opposite", "one arm decided", "no difference detected", "not testable")
"""The row's word, from the two arms (``row_word``)."""
ARM_FLOOR = 1e-3
"""TV units: the least floor an arm's label part must clear."""
ARM_FLOOR_STEPS: tuple[float, ...] = (0.25, 0.5, 1.0)
"""Steps s of the label-free moves whose label part sets each seed's floor (``Reached.free_floor``)."""
CONTRAST_FLOOR = 1e-3
"""TV units: the least floor of the (descriptive) contrast's label part."""
RESIDUAL_FLOOR = 1e-2
"""TV units: a reached readout within this of its entropy-matched null carries no label information."""
NULL_TOLERANCE = 1e-10
"""Bisection tolerance (log τ) of the entropy-matched null."""
NULL_PERMUTATIONS = 4
"""Label permutations among the batch's positions whose targets give the label parts' nulls."""
ALONG_FLOOR = 0.02
"""Shares of the way: the least floor an arm's component along m_k − g_k must clear."""
FREE_POWERS: tuple[float, ...] = (0.0, 0.5, 1.0, 2.0)
"""λ of the label-free points p_{k-1}^λ (normalised) the floor's moves head for; 1 − α is added."""
FREE_TEMPERATURES: tuple[float, ...] = (0.5, 2.0)
"""τ of the label-free tempered starts (p^0)^{1/τ} (normalised) among the floor's moves."""
MIN_TARGET_TV = 0.02
"""TV units: below this mean TV(m_k, g_k) both arms abstain. A label-free move reaches a TV label part of up to
0.01 per seed on the catalogue's batches (0.03 on readouts that lean toward the labels): targets closer than twice
the first cannot be told from that noise even by a move all the way to one of them."""


def label_free_move(log_start: torch.Tensor, log_prev: torch.Tensor, step: float, kind: str) -> torch.Tensor:
    """log of the move from p^0 toward p_{k-1} that uses no label: "arithmetic" (1−s)·p^0 + s·p_{k-1},
    "geometric" ∝ (p^0)^{1−s}·p_{k-1}^s (s = ``step`` in [0, 1])."""
    start, prev = log_start.double(), log_prev.double()
    if kind == "arithmetic":
        if step >= 1.0:
            return prev.clone()
        return torch.logaddexp(start + math.log1p(-step), prev + math.log(step)) if step > 0 else start.clone()
    if kind == "geometric":
        return torch.log_softmax((1.0 - step) * start + step * prev, dim=-1)
    raise ValueError(f"kind must be 'arithmetic' or 'geometric', got {kind!r}")


def _free_points(log_start: torch.Tensor, log_prev: torch.Tensor, alpha: float) -> list[torch.Tensor]:
    """log of the label-free points the fit's label-free directions head for: q_λ ∝ p_{k-1}^λ (λ ∈
    ``FREE_POWERS`` and 1 − α; λ = 0 is uniform, λ = 1 − α is g_k's label-free factor), the tempered
    starts (p^0)^{1/τ} (τ ∈ ``FREE_TEMPERATURES``), and the geometric midpoint ∝ (p^0)^{1/2}·q^{1/2} of
    each of them. None uses a label."""
    prev = log_prev.double()
    powers = sorted({*FREE_POWERS, round(1.0 - float(alpha), 12)})
    points = ([torch.log_softmax(lam * prev, dim=-1) for lam in powers]
              + [temper(log_start, tau) for tau in FREE_TEMPERATURES])
    return points + [label_free_move(log_start, q, 0.5, "geometric") for q in points]


def free_moves(log_start: torch.Tensor, log_prev: torch.Tensor, alpha: float) -> list[torch.Tensor]:
    """The label-free moves whose component along m_k − g_k sets a seed's floor: from p^0 toward each
    label-free point (``_free_points``), geometric ∝ (p^0)^{1−s}·q^s and arithmetic (1−s)·p^0 + s·q at
    s ∈ ``ARM_FLOOR_STEPS``. None uses a label."""
    return [label_free_move(log_start, q, s, kind) for q in _free_points(log_start, log_prev, alpha)
            for s in ARM_FLOOR_STEPS for kind in ("geometric", "arithmetic")]


def move_coefficients(log_prev: torch.Tensor, log_start: torch.Tensor, reads: Sequence[torch.Tensor],
                     label_sets: Sequence[torch.Tensor], alpha: float, epsilon: float) -> torch.Tensor:
    """[label set j, readout i, 2]: the coefficients (x, y) of the move p_i − p^0 ≈ x·(m − p^0) + y·(g − p^0)
    + Σ_l c_l·(q_l − p^0), least squares pooled over positions, m and g built from the labels of set j, the
    q_l the label-free points (``_free_points``; module docstring). Exact, full vocabulary, in blocks of
    positions; float64. NaN where m − p^0 and g − p^0 cannot be told apart once the label-free directions
    are taken out (the start on the line through m and g, or m = g)."""
    n, vocab = log_prev.shape
    size = max(1, BLOCK_ELEMS // max(1, vocab))
    points = _free_points(log_start, log_prev, alpha)
    k = 2 + len(points)
    gram = torch.zeros(len(label_sets), k, k, dtype=torch.float64)
    right = torch.zeros(len(label_sets), len(reads), k, dtype=torch.float64)
    for first in range(0, n, size):
        rows = slice(first, min(n, first + size))
        prev = log_prev[rows].double().exp()
        p0 = log_start[rows].double().exp()
        free = torch.stack([q[rows].exp() - p0 for q in points]).flatten(1)  # [l, block]
        moves = torch.stack([r[rows].double().exp() - p0 for r in reads]).flatten(1)  # [i, block]
        for j, labels in enumerate(label_sets):
            p_y = label_smooth(one_hot(labels[rows].long().to(prev.device), vocab, torch.float64), epsilon)
            to_m = arithmetic_target(p_y, prev, alpha) - p0
            to_g = geometric_target(p_y, prev, alpha)[0].exp() - p0
            design = torch.cat([to_m.flatten()[None], to_g.flatten()[None], free])  # [k, block]
            gram[j] += (design @ design.T).cpu()
            right[j] += (moves @ design.T).cpu()
    out = torch.full((len(label_sets), len(reads), 2), math.nan, dtype=torch.float64)
    for j in range(len(label_sets)):
        g_tt, g_tf, g_ff = gram[j, :2, :2], gram[j, :2, 2:], gram[j, 2:, 2:]
        inv_ff = torch.linalg.pinv(g_ff, rtol=1e-12, hermitian=True)
        schur = g_tt - g_tf @ inv_ff @ g_tf.T  # the targets' directions with the label-free ones taken out
        aa, ab, bb = schur[0, 0], schur[0, 1], schur[1, 1]
        det = aa * bb - ab * ab
        if not (aa > 1e-12 * g_tt[0, 0] and bb > 1e-12 * g_tt[1, 1] and det > 1e-9 * aa * bb):
            continue
        rhs = right[j, :, :2] - right[j, :, 2:] @ inv_ff @ g_tf.T  # [i, 2]
        out[j] = torch.linalg.solve(schur, rhs.T).T
    return out


@dataclass(frozen=True)
class Reached:
    """One training of one seed: where it stopped, the reached readout's distances and move coefficients,
    its null residual."""

    direction: str
    steps: int
    converged: bool  # the stopping criterion was met before the step limit
    loss_start: float
    loss_end: float  # the best local loss seen (the reached readout's)
    tv_m: float  # TV(p^d, m_k), mean over positions
    tv_g: float  # TV(p^d, g_k)
    residual: float  # ρ_d = TV(p^d, p̃^d), p̃^d = p^0 at the entropy-matched temperature
    temperature: float  # τ_d
    tv_m_permuted: float = math.nan  # TV(p^d, m_k) with the labels permuted (mean over NULL_PERMUTATIONS)
    tv_g_permuted: float = math.nan
    start_difference: float = math.nan  # D_0 = TV(p^0, m_k) − TV(p^0, g_k)
    start_difference_permuted: float = math.nan  # D̃_0: the same with the permuted labels (mean)
    toward_m: float = math.nan  # x_d: p^d − p^0 ≈ x_d·(m_k − p^0) + y_d·(g_k − p^0) (progress, descriptive)
    toward_g: float = math.nan  # y_d
    free_floor: float = math.nan  # largest |E − Ẽ| of the label-free moves at ARM_FLOOR_STEPS (descriptive)
    along_permuted: float = math.nan  # largest |x̃_d − ỹ_d|: the same coefficients with the labels permuted
    along_floor: float = math.nan  # largest |x − y| of the label-free moves (``free_moves``)

    @property
    def difference(self) -> float:
        """D_d = TV(p^d, m_k) − TV(p^d, g_k)."""
        return self.tv_m - self.tv_g

    @property
    def label_difference(self) -> float:
        """D_d − D̃_d: the part of D_d the labels add (NaN without the permuted distances)."""
        return self.difference - (self.tv_m_permuted - self.tv_g_permuted)

    @property
    def change(self) -> float:
        """E_d = D_d − D_0: < 0 when the training came closer to m_k relative to g_k than the start was."""
        return self.difference - self.start_difference

    @property
    def label_change(self) -> float:
        """E_d − Ẽ_d: the part of E_d the labels add (NaN without the permuted distances)."""
        return self.change - (self.tv_m_permuted - self.tv_g_permuted - self.start_difference_permuted)

    @property
    def along(self) -> float:
        """x_d − y_d: the move's signed component along m_k − g_k (> 0: toward m_k rather than g_k)."""
        return self.toward_m - self.toward_g


def label_permutations(labels: torch.Tensor, seed: int, count: int = NULL_PERMUTATIONS) -> list[torch.Tensor]:
    """``count`` seeded permutations of ``labels`` among their positions (the label parts' null)."""
    gen = torch.Generator().manual_seed(10_000 + int(seed))
    return [labels[torch.randperm(labels.numel(), generator=gen).to(labels.device)] for _ in range(count)]


def _differences(log_prev: torch.Tensor, reads: Sequence[torch.Tensor], label_sets: Sequence[torch.Tensor],
                 alpha: float, epsilon: float) -> torch.Tensor:
    """[label set, readout]: TV(p, m) − TV(p, g), means over positions, targets from each label set."""
    out = torch.zeros(len(label_sets), len(reads), dtype=torch.float64)
    for j, labels in enumerate(label_sets):
        for i, read in enumerate(reads):
            dist = readout_distances(log_prev, read, labels, alpha, epsilon)
            out[j, i] = float(dist["tv_m"].mean() - dist["tv_g"].mean())
    return out


def _free_floor(log_prev: torch.Tensor, log_start: torch.Tensor, labels: torch.Tensor,
                permuted: Sequence[torch.Tensor], alpha: float, epsilon: float) -> float:
    """The largest label part |E − Ẽ| over the label-free moves at ``ARM_FLOOR_STEPS`` (arithmetic and
    geometric)."""
    moves = [log_start] + [label_free_move(log_start, log_prev, s, kind) for s in ARM_FLOOR_STEPS
                           for kind in ("arithmetic", "geometric")]
    diff = _differences(log_prev, moves, [labels, *permuted], alpha, epsilon)
    change = diff[:, 1:] - diff[:, :1]  # E per label set and move
    return float((change[0] - change[1:].mean(0)).abs().max())


def _along_floor(log_prev: torch.Tensor, log_start: torch.Tensor, labels: torch.Tensor, alpha: float,
                 epsilon: float) -> float:
    """The largest |x − y| over the label-free moves (``free_moves``), the true labels' targets."""
    coef = move_coefficients(log_prev, log_start, free_moves(log_start, log_prev, alpha), [labels], alpha, epsilon)
    along = (coef[0, :, 0] - coef[0, :, 1]).abs()
    along = along[torch.isfinite(along)]
    return float(along.max()) if along.numel() else math.nan


FLOOR_MEMO = 4
"""Inputs per floor whose values ``_floors`` keeps: a seed's arms and controls ask for the same floors."""
_FLOORS: dict[str, list[tuple[tuple[torch.Tensor, ...], tuple[float, float], float]]] = {"free": [], "along": []}


def _memo(kind: str, inputs: tuple[torch.Tensor, ...], alpha: float, epsilon: float, compute) -> float:
    """``compute()``, or the value kept for equal inputs (``torch.equal``, the same shapes and dtypes, as
    copies, the last ``FLOOR_MEMO`` per kind): the same number, computed once."""
    kept = _FLOORS[kind]
    settings = (float(alpha), float(epsilon))
    for tensors, where, value in kept:
        if where == settings and len(tensors) == len(inputs) and all(
                x.shape == y.shape and x.dtype == y.dtype and torch.equal(x, y.to(x.device))
                for x, y in zip(inputs, tensors, strict=True)):
            return value
    value = compute()
    kept.insert(0, (tuple(x.detach().clone() for x in inputs), settings, value))
    del kept[FLOOR_MEMO:]
    return value


def _floors(log_prev: torch.Tensor, log_start: torch.Tensor, labels: torch.Tensor,
            permuted: Sequence[torch.Tensor], alpha: float, epsilon: float) -> tuple[float, float]:
    """(``_free_floor``, ``_along_floor``) of one seed: they depend on its p_{k-1}, p^0, labels (and label
    permutations), not on the reached readout, and every arm and control of the seed asks for them
    (``_memo``)."""
    free = (_memo("free", (log_prev, log_start, labels, *permuted), alpha, epsilon,
                  lambda: _free_floor(log_prev, log_start, labels, permuted, alpha, epsilon))
            if permuted else math.nan)
    along = _memo("along", (log_prev, log_start, labels), alpha, epsilon,
                  lambda: _along_floor(log_prev, log_start, labels, alpha, epsilon))
    return free, along


def reached(direction: str, log_prev: torch.Tensor, log_start: torch.Tensor, log_p: torch.Tensor,
            labels: torch.Tensor, alpha: float, epsilon: float, *, steps: int = 0, converged: bool = True,
            loss_start: float = float("nan"), loss_end: float = float("nan"),
            permuted: Sequence[torch.Tensor] = ()) -> Reached:
    """``Reached`` from log p_{k-1}, the start log p^0 and the reached log p^d ([N, V], full vocabulary);
    ``permuted``: label permutations (``label_permutations``) whose targets give the label parts' nulls
    and, with the label-free moves, the seed's floor."""
    dist = readout_distances(log_prev, log_p, labels, alpha, epsilon)
    tau = entropy_matching_temperature(log_start, float(dist["entropy"].mean()), tol=NULL_TOLERANCE)
    residual = 0.5 * (log_p.double().exp() - temper(log_start, tau).exp()).abs().sum(-1).mean()
    diff = _differences(log_prev, [log_p, log_start], [labels, *permuted], alpha, epsilon)
    null = diff[1:].mean(0) if permuted else torch.full((2,), math.nan, dtype=torch.float64)
    tv_null = [readout_distances(log_prev, log_p, other, alpha, epsilon) for other in permuted]
    tv_m_null = sum(float(d["tv_m"].mean()) for d in tv_null) / len(tv_null) if tv_null else math.nan
    tv_g_null = sum(float(d["tv_g"].mean()) for d in tv_null) / len(tv_null) if tv_null else math.nan
    coefs = move_coefficients(log_prev, log_start, [log_p], [labels, *permuted], alpha, epsilon)[:, 0]
    coef = coefs[0]
    along_nulls = (coefs[1:, 0] - coefs[1:, 1]).abs()
    along_nulls = along_nulls[torch.isfinite(along_nulls)]
    along_null = float(along_nulls.max()) if along_nulls.numel() else math.nan
    floor, along_floor = _floors(log_prev, log_start, labels, permuted, alpha, epsilon)
    return Reached(direction, steps, converged, loss_start, loss_end, float(dist["tv_m"].mean()),
                   float(dist["tv_g"].mean()), float(residual), tau, tv_m_null, tv_g_null, float(diff[0, 1]),
                   float(null[1]), float(coef[0]), float(coef[1]), floor, along_null, along_floor)


@dataclass(frozen=True)
class FixedPointSeed:
    """One seed: both trainings from the same start, and the start's own distances."""

    seed: int
    forward: Reached
    reverse: Reached
    start_tv_m: float  # TV(p^0, m_k)
    start_tv_g: float
    tv_m_g: float  # TV(m_k, g_k)
    seconds: float = 0.0

    @property
    def contrast(self) -> float:
        """C = D_F − D_R (descriptive)."""
        return self.forward.difference - self.reverse.difference

    @property
    def label_contrast(self) -> float:
        """C_label = (D_F − D̃_F) − (D_R − D̃_R) (NaN without the permuted distances; descriptive)."""
        return self.forward.label_difference - self.reverse.label_difference

    @property
    def progress_forward(self) -> float:
        """x_F: the share of the way from p^0 to m_k the CE training moved (1: reached m_k)."""
        return self.forward.toward_m

    @property
    def progress_reverse(self) -> float:
        """y_R: the share of the way from p^0 to g_k the reverse training moved (1: reached g_k)."""
        return self.reverse.toward_g

    def arm(self, direction: str, labelled: bool = True) -> float:
        """A_d: the arm's statistic, > 0 toward its own optimum: −(E_F − Ẽ_F) for the CE arm,
        E_R − Ẽ_R for the reverse arm (E_d itself with ``labelled`` False)."""
        r = self.forward if direction == "forward" else self.reverse
        value = r.label_change if labelled else r.change
        return -value if direction == "forward" else value

    def arm_along(self, direction: str) -> float:
        """B_d: the arm's projection statistic, > 0 toward its own optimum: x_F − y_F for the CE arm,
        y_R − x_R for the reverse arm."""
        r = self.forward if direction == "forward" else self.reverse
        return r.along if direction == "forward" else -r.along

    @property
    def free_floor(self) -> float:
        """The seed's TV floor: the largest label part of the label-free moves (NaN without the null)."""
        return max(self.forward.free_floor, self.reverse.free_floor)

    def along_floor(self, direction: str) -> float:
        """The arm's projection floor on this seed: the largest |x − y| of the label-free moves and of the arm's
        reached readout measured against the permuted labels' targets (those present)."""
        r = self.forward if direction == "forward" else self.reverse
        found = [v for v in (r.along_floor, r.along_permuted) if math.isfinite(v)]
        return max(found) if found else math.nan

    def label_blind(self, floor: float = RESIDUAL_FLOOR) -> bool:
        """Whether a reached readout is within ``floor`` of its entropy-matched null."""
        return min(self.forward.residual, self.reverse.residual) <= floor


@dataclass(frozen=True)
class ArmDecision:
    """One arm's decision: its statistic's interval over the counted seeds, its p and Holm-adjusted p."""

    arm: str  # "CE" (own optimum m_k) or "reverse" (own optimum g_k)
    outcome: str  # one of ARM_OUTCOMES
    interval: Interval | None  # A_d over the counted seeds (> 0: toward its own optimum)
    floor: float
    p_value: float | None = None  # two-sided t-test of the statistic against the floor on its estimate's side
    adjusted: float | None = None  # Holm over the two arms
    least_detectable: float | None = None  # the least |mean statistic| this noise and floor would decide
    reason: str = ""  # why an arm is not testable, in words

    @property
    def decided(self) -> bool:
        return self.outcome in ARM_OUTCOMES[:2]


def row_word(forward: str, reverse: str) -> str:
    """The row's word from the CE arm's and the reverse arm's outcomes (module docstring)."""
    own, other = ARM_OUTCOMES[:2]
    words = {(own, own): OUTCOMES[0], (own, other): OUTCOMES[1], (other, own): OUTCOMES[2], (other, other): OUTCOMES[3]}
    if (forward, reverse) in words:
        return words[(forward, reverse)]
    decided = [w for w in (forward, reverse) if w in (own, other)]
    if decided:
        return OUTCOMES[4]
    if forward == reverse == ARM_OUTCOMES[3]:
        return OUTCOMES[6]
    return OUTCOMES[5]


def least_detectable(values: Sequence[float], floor: float, level: float, arms: int = 2) -> float | None:
    """The least |mean| of ``values`` that clears ``floor`` at Holm's first step over ``arms`` arms:
    floor + t_{1 − (1 − level)/(2·arms), n−1}·sd/√n (None below ``MIN_SEEDS`` finite values)."""
    x = [float(v) for v in values if math.isfinite(float(v))]
    if len(x) < max(2, MIN_SEEDS):
        return None
    mean = sum(x) / len(x)
    sd = math.sqrt(sum((v - mean) ** 2 for v in x) / (len(x) - 1))
    return float(floor + t_dist.ppf(1.0 - (1.0 - level) / (2.0 * arms), df=len(x) - 1) * sd / math.sqrt(len(x)))


def _arms(counted: Sequence[FixedPointSeed], statistic: str, floors: Sequence[float], level: float,
          untestable: str = "") -> list[ArmDecision]:
    """Both arms, Holm over the two (module docstring); ``floors``: the CE arm's and the reverse arm's;
    ``untestable``: the reason both arms abstain."""
    found = []
    for (direction, name), floor in zip((("forward", "CE"), ("reverse", "reverse")), floors, strict=True):
        if statistic == "projection":
            values = [s.arm_along(direction) for s in counted]
        else:
            values = [s.arm(direction, statistic == "label part") for s in counted]
        interval = None if untestable else seed_interval(values, level, min_seeds=MIN_SEEDS)
        p = None
        if interval is not None:  # nothing to reject while the estimate lies within the floor
            side = floor if interval.estimate > 0 else -floor
            p = t_test_p(values, side) if abs(interval.estimate) > floor else 1.0
        reason = untestable
        if interval is None and not reason:
            finite = sum(math.isfinite(v) for v in values)
            reason = (f"{finite} seed(s) with a defined statistic, fewer than {MIN_SEEDS}"
                      + (" (the move's components toward m_k and toward g_k cannot be told apart: the start lies "
                         "on the line through them)" if finite < len(values) else ""))
        found.append((name, interval, p, values, reason, floor))
    tested = [i for i, (_, _, p, _, _, _) in enumerate(found) if p is not None]
    adjusted = dict(zip(tested, holm([found[i][2] for i in tested]), strict=True))
    out = []
    for i, (name, interval, p, values, reason, floor) in enumerate(found):
        least = None
        if interval is None:
            outcome = ARM_OUTCOMES[3]
        elif adjusted[i] < 1.0 - level:
            outcome = ARM_OUTCOMES[0] if interval.estimate > 0 else ARM_OUTCOMES[1]
        else:
            outcome = ARM_OUTCOMES[2]
            least = least_detectable(values, floor, level)
        out.append(ArmDecision(name, outcome, interval, floor, p, adjusted.get(i), least, reason))
    return out


def _row_p(arms: Sequence[ArmDecision]) -> float | None:
    """The largest adjusted p of the decided arms; the smallest adjusted p when none is decided."""
    decided = [a.adjusted for a in arms if a.decided and a.adjusted is not None]
    if decided:
        return max(decided)
    tested = [a.adjusted for a in arms if a.adjusted is not None]
    return min(tested) if tested else None


@register
@dataclass(frozen=True)
class FixedPointResult(Result):
    """The fixed-point experiment on one chunk: per-seed records, each arm's decision, the row's word."""

    kind = "fixed_point"
    outcome: str
    chunk: int
    alpha: float
    epsilon: float
    seeds: list[FixedPointSeed]
    contrast: Interval | None  # C over the counted seeds (descriptive)
    counted: int
    label_blind: list[int]  # seeds left out by the guard
    floor: float  # the contrast's floor (TV units, descriptive)
    residual_floor: float
    converged: int  # trainings (two per seed) that met the stopping criterion
    settings: dict[str, str] = field(default_factory=dict)
    statistic: str = "change"  # what the arms decided on (``_statistic``): "projection" (B_d), "label part"
    # (A_d) or "change" (−E_F, E_R)
    label_contrast: Interval | None = None  # C_label over the counted seeds, when recorded (descriptive)
    forward_arm: ArmDecision | None = None
    reverse_arm: ArmDecision | None = None
    arm_floor: float = math.nan  # the larger of the two arms' floors (each arm's in ``ArmDecision.floor``)
    progress_forward: Interval | None = None  # x_F over the counted seeds (share of the way to m_k)
    progress_reverse: Interval | None = None  # y_R (share of the way to g_k)
    forward_other: Interval | None = None  # y_F: the CE training's share of the way to g_k
    reverse_other: Interval | None = None  # x_R: the reverse training's share of the way to m_k
    p_value: float | None = None  # the row's p (module docstring)

    @property
    def arms(self) -> tuple[ArmDecision, ...]:
        return tuple(a for a in (self.forward_arm, self.reverse_arm) if a is not None)


FIXED_POINT = declare_family("fixed_point_chunk", FixedPointResult)
"""The fixed-point experiment of each chunk run (``fixed_point.json``)."""


def _statistic(counted: Sequence[FixedPointSeed]) -> str:
    """What the arms decide on: "projection" (the component along m_k − g_k) when every counted record
    carries its projection floor; records written without it use the TV change: "label part" (with the
    permuted distances) or "change"."""
    if counted and all(math.isfinite(s.forward.along_floor) and math.isfinite(s.reverse.along_floor)
                       for s in counted):
        return "projection"
    if counted and all(math.isfinite(s.arm("forward")) and math.isfinite(s.arm("reverse")) for s in counted):
        return "label part"
    return "change"


def fixed_point_decision(seeds: Sequence[FixedPointSeed], chunk: int, alpha: float, epsilon: float,
                         level: float = 0.95, settings: dict[str, str] | None = None,
                         floor: float = CONTRAST_FLOOR, residual_floor: float = RESIDUAL_FLOOR) -> FixedPointResult:
    """The decision of the module docstring over the seeds' records (``floor``: the descriptive contrast's)."""
    blind = [s.seed for s in seeds if s.label_blind(residual_floor)]
    counted = [s for s in seeds if not s.label_blind(residual_floor)]
    statistic = _statistic(counted)
    if statistic == "projection":
        arm_floors = []
        for direction in ("forward", "reverse"):
            floors = [s.along_floor(direction) for s in counted if math.isfinite(s.along_floor(direction))]
            arm_floors.append(max(ALONG_FLOOR, sum(floors) / len(floors)) if floors else ALONG_FLOOR)
    else:
        floors = [s.free_floor for s in counted if math.isfinite(s.free_floor)]
        floor_tv = max(ARM_FLOOR, sum(floors) / len(floors)) if statistic == "label part" and floors else ARM_FLOOR
        arm_floors = [floor_tv, floor_tv]
    arm_floor = max(arm_floors)
    targets = [s.tv_m_g for s in counted if math.isfinite(s.tv_m_g)]
    closest = sum(targets) / len(targets) if targets else math.nan
    untestable = (f"targets closer than {MIN_TARGET_TV:g} in TV (TV(m_k, g_k) = {closest:.3g})"
                  if math.isfinite(closest) and closest < MIN_TARGET_TV else "")
    forward_arm, reverse_arm = _arms(counted, statistic, arm_floors, level, untestable)
    converged = sum(int(s.forward.converged) + int(s.reverse.converged) for s in seeds)

    def over(values: list[float]) -> Interval | None:
        return seed_interval(values, level, min_seeds=MIN_SEEDS)

    with_null = bool(counted) and all(math.isfinite(s.label_contrast) for s in counted)
    return FixedPointResult(
        row_word(forward_arm.outcome, reverse_arm.outcome), int(chunk), float(alpha), float(epsilon), list(seeds),
        over([s.contrast for s in counted]), len(counted), blind, float(floor), float(residual_floor), converged,
        dict(settings or {}), statistic,
        over([s.label_contrast for s in counted]) if with_null else None, forward_arm, reverse_arm, float(arm_floor),
        over([s.progress_forward for s in counted]), over([s.progress_reverse for s in counted]),
        over([s.forward.toward_g for s in counted]), over([s.reverse.toward_m for s in counted]),
        _row_p((forward_arm, reverse_arm)))
