"""Hostile referee: constructions with known answers against Lemma 2's fixed-point rule, each arm on its own.

    OMP_NUM_THREADS=1 python3 scripts/break_fixed_point_arms.py [--groups 20] [--out table.md]

Every construction builds, per seed, a batch (p_{k-1}, the start p^0, labels, m_k, g_k) and the two
"reached" readouts p^F and p^R, and reads them through the row's own code: ``reached`` (with the
label-permutation null of ``label_permutations``) and ``fixed_point_decision`` of
``analyses.lemma2.fixed_point``, exactly as ``analyses.lemma2.families.seed_records`` does, but at the
construction's own α, ε and batch shape. The moves are the catalogue's (``toward``, ``optimum``,
``label_free``, ``toward_relabelled``, ``jitter``) plus a few label-free ones of this
harness (tempering p^0, moving toward a point drawn without the labels).

A batch ``Setting``: p_{k-1} = softmax(spread·z + lean·onehot(label)), p^0 = softmax(log p_{k-1} +
noise·z'); ``lean`` > 0 makes p_{k-1} and p^0 lean toward the labels as a trained model's readouts do
(the catalogue's batches have lean 0). ``beyond`` places p^0 past g_k on the line from m_k through
g_k (p^0 = g_k + c·(g_k − m_k), c as large as keeps p^0 positive, at most 1).

Truths are sets of accepted outcomes per arm (``ARM_OUTCOMES``): a move toward its own loss's
minimizer (a component along m_k − g_k of the right sign) must read "toward its own optimum"; a move
that uses no label, a move toward a relabelled target, or a move when m_k ≈ g_k must not read a
direction ("no difference detected" or "not testable"). A construction agrees when at most 5% of the
groups read an outcome outside the truth and none reads a direction outside it.
Prints one markdown table: construction | truth | outcome share | agrees?
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this checkout's packages, not an installed one

from analyses.lemma2.families import (  # noqa: E402
    Batch,
    Move,
    N,
    V,
    jitter,
    label_free,
    optimum,
    toward,
    toward_relabelled,
)
from analyses.lemma2.fixed_point import (  # noqa: E402
    ARM_OUTCOMES,
    FixedPointResult,
    FixedPointSeed,
    fixed_point_decision,
    label_permutations,
    reached,
)
from zerolock_theory.theory.lemma2 import readout_distances, temper  # noqa: E402
from zerolock_theory.theory.targets import (  # noqa: E402
    arithmetic_target,
    geometric_target,
    label_smooth,
    one_hot,
)

OWN, OTHER, NONE, UNTESTABLE = ARM_OUTCOMES
SHORT = {OWN: "own", OTHER: "other's", NONE: "none", UNTESTABLE: "untestable"}
NO_DIRECTION = frozenset({NONE, UNTESTABLE})


@dataclass(frozen=True)
class Shape:
    """What each attack's batches state: p_{k-1}'s logit scale, p^0's noise, α, ε."""

    spread: float = 2.0
    noise: float = 2.0
    alpha: float = 0.5
    epsilon: float = 0.1


@dataclass(frozen=True)
class Setting(Shape):
    """One batch shape of this attack: a ``Shape`` with the labels' lean and where p^0 starts."""

    lean: float = 0.0
    beyond: bool = False


PEAKED = Setting()
UNIFORM = Setting(0.3, 0.5)


def batch(seed: int, s: Setting) -> Batch:
    """The batch of ``seed`` at setting ``s`` (module docstring); the catalogue's ``synthetic_batch`` at
    lean 0, α = 0.5, ε = 0.1 draws the same numbers."""
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(N, V, generator=g, dtype=torch.float64)
    z0 = torch.randn(N, V, generator=g, dtype=torch.float64)
    labels = torch.randint(V, (N,), generator=g)
    log_prev = torch.log_softmax(s.spread * z + s.lean * one_hot(labels, V, torch.float64), -1)
    log_start = torch.log_softmax(log_prev + s.noise * z0, -1)
    p_y = label_smooth(one_hot(labels, V, torch.float64), s.epsilon)
    m = arithmetic_target(p_y, log_prev.exp(), s.alpha)
    g_k = geometric_target(p_y, log_prev.exp(), s.alpha)[0].exp()
    if s.beyond:
        step = g_k - m
        room = torch.where(step < 0, g_k / (-step).clamp_min(1e-300), torch.full_like(g_k, math.inf)).amin(-1)
        c = (0.9 * room).clamp(max=1.0)[:, None]
        log_start = (g_k + c * step).log()
    return Batch(seed, log_prev, log_start, labels, m, g_k)


def tempered(tau: float, noise: float = 0.0, salt: int = 0) -> Move:
    """p^0 at temperature τ (> 1 flattens, < 1 sharpens), with optional label-free log-noise: no label used."""
    def move(b: Batch) -> torch.Tensor:
        out = temper(b.log_start, tau)
        return jitter(noise, salt)(Batch(b.seed, b.log_prev, out, b.labels, b.m, b.g)) if noise else out
    return move


def toward_point(lam: float, kind: str, alpha: float = 0.5) -> Move:
    """(1−λ)·p^0 + λ·q for a third point q that uses no label: "random" (softmax of 3·z), "token" (the
    one-hot, ε-smoothed, of a token drawn independently of the label), "flat prev" (p_{k-1}^{1−α}
    normalised: g_k's label-free factor)."""
    def move(b: Batch) -> torch.Tensor:
        gen = torch.Generator().manual_seed(31 * b.seed + 5)
        if kind == "random":
            q = torch.softmax(3.0 * torch.randn(N, V, generator=gen, dtype=torch.float64), -1)
        elif kind == "token":
            q = label_smooth(one_hot(torch.randint(V, (N,), generator=gen), V, torch.float64), 0.1)
        else:
            q = torch.softmax((1.0 - alpha) * b.log_prev, -1)
        return ((1.0 - lam) * b.log_start.exp() + lam * q).log()
    return move


def toward_label(lam: float, epsilon: float = 0.1) -> Move:
    """(1−λ)·p^0 + λ·p_y^ε: toward the smoothed label itself (neither target; on these batches of 64 tokens
    with labels drawn apart from p_{k-1}, m_k holds more of the label's mass than g_k, so the move's
    component along m_k − g_k points to m_k)."""
    return lambda b: ((1.0 - lam) * b.log_start.exp()
                      + lam * label_smooth(one_hot(b.labels, V, torch.float64), epsilon)).log()


def past_m(lam: float) -> Move:
    """(1−λ)·p^0 + λ·(m_k + ½(m_k − g_k)) (clipped at 0, renormalised): past m_k, away from g_k."""
    def move(b: Batch) -> torch.Tensor:
        q = (b.m + 0.5 * (b.m - b.g)).clamp_min(1e-12)
        return ((1.0 - lam) * b.log_start.exp() + lam * q / q.sum(-1, keepdim=True)).log()
    return move


@dataclass(frozen=True)
class Attack:
    """A construction: both arms' moves, the setting, the seeds per group, and the accepted outcomes."""

    name: str
    forward: Move
    reverse: Move
    truth: tuple[frozenset[str], frozenset[str]]  # accepted outcomes of (CE arm, reverse arm)
    setting: Setting = PEAKED
    n_seeds: int = 5
    outlier: tuple[Move, Move] | None = None  # the moves of each group's first seed, when set


def _own(*extra: str) -> frozenset[str]:
    return frozenset({OWN, *extra})


def _other(*extra: str) -> frozenset[str]:
    return frozenset({OTHER, *extra})


def records(a: Attack, group: int, make_batch: Callable | None = None,
            moves: Callable[[int], tuple[Move, Move]] | None = None) -> list[FixedPointSeed]:
    """The per-seed records of ``a``'s group ``group`` (batch seeds 1000·group + 0..n_seeds−1), built as
    ``analyses.lemma2.families.seed_records`` builds them, at the setting's α and ε. ``make_batch(seed,
    setting)`` and ``moves(i)`` (seed i's two moves) default to this attack's."""
    s, out = a.setting, []
    for i, seed in enumerate(range(1000 * group, 1000 * group + a.n_seeds)):
        b = (make_batch or batch)(seed, s)
        permuted = label_permutations(b.labels, seed)
        if moves is not None:
            fwd, rev = moves(i)
        else:
            fwd, rev = a.outlier if (a.outlier is not None and i == 0) else (a.forward, a.reverse)
        rec = {d: reached(d, b.log_prev, b.log_start, move(b), b.labels, s.alpha, s.epsilon, permuted=permuted)
               for d, move in (("forward", fwd), ("reverse", rev))}
        start = readout_distances(b.log_prev, b.log_start, b.labels, s.alpha, s.epsilon)
        out.append(FixedPointSeed(seed, rec["forward"], rec["reverse"], float(start["tv_m"].mean()),
                                  float(start["tv_g"].mean()), float(start["tv_m_g"].mean())))
    return out


def decide(a: Attack, group: int = 0) -> FixedPointResult:
    """The row's decision on ``a``'s group ``group``."""
    return fixed_point_decision(records(a, group), 1, a.setting.alpha, a.setting.epsilon)


def outcomes(a: Attack, group: int = 0) -> tuple[str, str]:
    found = decide(a, group)
    return found.forward_arm.outcome, found.reverse_arm.outcome


def judge(a: Attack, groups: Sequence[int], decided: Callable[[Attack, int], FixedPointResult] | None = None
          ) -> dict[str, object]:
    """Over ``groups``: the outcome pairs, the share outside the truth, the share reading a direction
    outside it, the mean TV(m_k, g_k), and whether the construction agrees (``decided``: the decision
    on one group, this attack's ``decide`` unless given)."""
    pairs: Counter[tuple[str, str]] = Counter()
    off = wrong = 0
    tv = []
    for group in groups:
        found = (decided or decide)(a, group)
        pair = (found.forward_arm.outcome, found.reverse_arm.outcome)
        pairs[pair] += 1
        tv += [s.tv_m_g for s in found.seeds]
        off += any(o not in t for o, t in zip(pair, a.truth, strict=True))
        wrong += any(o in (OWN, OTHER) and o not in t for o, t in zip(pair, a.truth, strict=True))
    n = len(groups)
    return {"pairs": pairs, "off": off / n, "wrong": wrong / n, "tv_m_g": sum(tv) / len(tv),
            "agrees": off / n <= 0.05 and wrong == 0}


def _m(lam: float) -> Move:
    return toward("m", lam)


def _g(lam: float) -> Move:
    return toward("g", lam)


LEAN = Setting(lean=2.0)
ALPHA_HIGH = Setting(alpha=0.99)
ALPHA_LOW = Setting(alpha=0.01)
EPS_SMALL = Setting(epsilon=1e-3)
FLAT = Setting(0.05, 0.1)
SPIKY = Setting(6.0, 2.0)
BEYOND = Setting(beyond=True)
OWN_OWN, OWN_OTHER, OTHER_OWN, OTHER_OTHER = (_own(), _own()), (_own(), _other()), (_other(), _own()), (_other(), _other())
BLIND = (NO_DIRECTION, NO_DIRECTION)

ATTACKS: tuple[Attack, ...] = (
    *(Attack(f"CE -> m_k, reverse -> g_k, {lam:.0%}", _m(lam), _g(lam), OWN_OWN) for lam in (0.1, 0.2, 0.5, 1.0)),
    Attack("CE -> m_k 100%, reverse -> g_k 10%", _m(1.0), _g(0.1), OWN_OWN),
    Attack("CE -> m_k 10%, reverse -> g_k 100%", _m(0.1), _g(1.0), OWN_OWN),
    *(Attack(f"both -> m_k, {lam:.0%}", _m(lam), _m(lam), OWN_OTHER) for lam in (0.1, 0.5, 1.0)),
    *(Attack(f"both -> g_k, {lam:.0%}", _g(lam), _g(lam), OTHER_OWN) for lam in (0.1, 0.5, 1.0)),
    *(Attack(f"CE -> g_k, reverse -> m_k, {lam:.0%}", _g(lam), _m(lam), OTHER_OTHER) for lam in (0.1, 0.5)),
    Attack("label-free toward p_(k-1), s = 1", label_free("arithmetic", 1.0), label_free("geometric", 1.0), BLIND),
    Attack("label-free: flatten p^0 (tau = 2)", tempered(2.0), tempered(2.0), BLIND),
    Attack("label-free: flatten p^0 (tau = 2) + noise 0.1", tempered(2.0, 0.1, 1), tempered(2.0, 0.1, 2), BLIND),
    Attack("label-free: sharpen p^0 (tau = 0.5) + noise 0.1", tempered(0.5, 0.1, 1), tempered(0.5, 0.1, 2), BLIND),
    Attack("label-free: toward p_(k-1)^(1-a) (g_k's label-free factor), 100%", toward_point(1.0, "flat prev"),
           toward_point(1.0, "flat prev"), BLIND),
    Attack("leaning batch: label-free toward p_(k-1), s = 1", label_free("arithmetic", 1.0),
           label_free("geometric", 1.0), BLIND, LEAN),
    Attack("leaning batch: sharpen p^0 (tau = 0.5) + noise 0.1", tempered(0.5, 0.1, 1), tempered(0.5, 0.1, 2),
           BLIND, LEAN),
    Attack("leaning batch: flatten p^0 (tau = 2) + noise 0.1", tempered(2.0, 0.1, 1), tempered(2.0, 0.1, 2),
           BLIND, LEAN),
    Attack("leaning batch: toward p_(k-1)^(1-a), 100%", toward_point(1.0, "flat prev"),
           toward_point(1.0, "flat prev"), BLIND, LEAN),
    Attack("leaning batch: CE -> m_k, reverse -> g_k, 50%", _m(0.5), _g(0.5), OWN_OWN, LEAN),
    Attack("exact optima: p^F = m_k, p^R = g_k", optimum("m"), optimum("g"), OWN_OWN),
    Attack("leaning batch: exact optima", optimum("m"), optimum("g"), OWN_OWN, LEAN),
    Attack("relabelled inputs: toward permuted m_k, g_k, 100%", toward_relabelled("m", 1.0),
           toward_relabelled("g", 1.0), BLIND),
    Attack("relabelled inputs: both toward permuted m_k, 50%", toward_relabelled("m", 0.5),
           toward_relabelled("m", 0.5), BLIND),
    Attack("nearly flat p_(k-1) (spread 0.05): CE -> m_k, reverse -> g_k, 50%", _m(0.5), _g(0.5), OWN_OWN, FLAT),
    Attack("nearly flat p_(k-1): exact optima", optimum("m"), optimum("g"), OWN_OWN, FLAT),
    Attack("nearly flat p_(k-1): label-free toward p_(k-1), s = 1", label_free("arithmetic", 1.0),
           label_free("geometric", 1.0), BLIND, FLAT),
    Attack("very peaked p_(k-1) (spread 6): CE -> m_k, reverse -> g_k, 50%", _m(0.5), _g(0.5), OWN_OWN, SPIKY),
    Attack("very peaked p_(k-1): label-free toward p_(k-1), s = 1", label_free("arithmetic", 1.0),
           label_free("geometric", 1.0), BLIND, SPIKY),
    Attack("alpha = 0.99 (m_k ~ g_k): CE -> m_k, reverse -> g_k, 80%", _m(0.8), _g(0.8), BLIND, ALPHA_HIGH),
    Attack("alpha = 0.99 (m_k ~ g_k): both -> m_k, 80%", _m(0.8), _m(0.8), BLIND, ALPHA_HIGH),
    Attack("alpha = 0.01 (m_k ~ g_k): CE -> m_k, reverse -> g_k, 80%", _m(0.8), _g(0.8), BLIND, ALPHA_LOW),
    Attack("epsilon = 0.001: CE -> m_k, reverse -> g_k, 80%", _m(0.8), _g(0.8), OWN_OWN, EPS_SMALL),
    Attack("start beyond g_k: CE -> m_k 50%, reverse reaches g_k", _m(0.5), optimum("g"), OWN_OWN, BEYOND),
    Attack("start beyond g_k: reverse -> g_k 50%, CE label-free noise", jitter(0.3, 1), _g(0.5),
           (NO_DIRECTION, _own()), BEYOND),
    Attack("2 seeds: CE -> m_k, reverse -> g_k, 80%", _m(0.8), _g(0.8), (_own(UNTESTABLE), _own(UNTESTABLE)),
           n_seeds=2),
    Attack("3 seeds: CE -> m_k, reverse -> g_k, 80%", _m(0.8), _g(0.8), OWN_OWN, n_seeds=3),
    Attack("3 seeds: label-free noise", jitter(0.3, 1), jitter(0.3, 2), BLIND, n_seeds=3),
    Attack("outlier: 4 seeds label-free noise, 1 seed at swapped optima", jitter(0.3, 1), jitter(0.3, 2), BLIND,
           outlier=(optimum("g"), optimum("m"))),
    Attack("outlier: 4 seeds own 80%, 1 seed at swapped optima", _m(0.8), _g(0.8), (_own(NONE), _own(NONE)),
           outlier=(optimum("g"), optimum("m"))),
    Attack("third point: toward a random label-free q, 50%", toward_point(0.5, "random"),
           toward_point(0.5, "random"), BLIND),
    Attack("third point: toward a random label-free q, 100%", toward_point(1.0, "random"),
           toward_point(1.0, "random"), BLIND),
    Attack("third point: toward a random token's one-hot, 50%", toward_point(0.5, "token"),
           toward_point(0.5, "token"), BLIND),
    Attack("third point: toward the smoothed label p_y (nearer m_k than g_k here), 50%", toward_label(0.5),
           toward_label(0.5), (_own(NONE), _other(NONE))),
    Attack("third point: past m_k away from g_k, 50%", past_m(0.5), past_m(0.5), (_own(NONE), _other(NONE))),
)


def attack(name: str, attacks: Sequence[Attack] = ATTACKS) -> Attack:
    """The attack called ``name`` (among ``attacks``: this harness's unless given)."""
    for a in attacks:
        if a.name == name:
            return a
    raise KeyError(name)


def _truth(a: Attack) -> str:
    return "; ".join("/".join(SHORT[o] for o in ARM_OUTCOMES if o in t) for t in a.truth)


def table(groups: int, attacks: Sequence[Attack] = ATTACKS, out: Callable[[str], None] = print,
          decided: Callable[[Attack, int], FixedPointResult] | None = None,
          seeds: str = "5 seeds each unless named") -> list[str]:
    """Print the markdown table; return the names of the constructions that do not agree (``decided`` and
    ``seeds`` as in ``judge`` and the header: this harness's decision and seed count unless given)."""
    out(f"{groups} seeded groups per construction ({seeds}). Truth and outcomes: CE arm; reverse arm. own = "
        "toward its own optimum, other's = toward the other's, none = no difference detected.\n")
    out("| construction | TV(m_k, g_k) | truth | outcome share over groups | off truth | wrong direction | agrees? |")
    out("|---|---|---|---|---|---|---|")
    breaks = []
    for a in attacks:
        j = judge(a, range(groups), decided)
        shares = ", ".join(f"{SHORT[f]}; {SHORT[r]} {n / groups:.0%}" for (f, r), n in j["pairs"].most_common())
        out(f"| {a.name} | {j['tv_m_g']:.3f} | {_truth(a)} | {shares} | {j['off']:.0%} | {j['wrong']:.0%} | "
            f"{'yes' if j['agrees'] else '**no**'} |")
        sys.stdout.flush()
        if not j["agrees"]:
            breaks.append(a.name)
    return breaks


def cli(description: str, attacks: Sequence[Attack], table_of: Callable[..., list[str]], parts: bool = False
        ) -> None:
    """The command line of a break harness: ``--groups`` and ``--out`` (and with ``parts``, ``--only``, ``--skip``
    and ``--first`` to run part of ``attacks``); prints ``table_of``'s table, then the breaks."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--groups", type=int, default=20, help="seeded groups per construction")
    parser.add_argument("--out", type=Path, default=None, help="also write the table here")
    if parts:
        parser.add_argument("--only", default="", help="only the constructions whose name contains this")
        parser.add_argument("--skip", default="", help="leave out the constructions whose name contains this")
        parser.add_argument("--first", type=int, default=0, help="start at this construction (0-based)")
    args = parser.parse_args()
    lines: list[str] = []

    def out(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    if parts:
        attacks = [a for a in attacks[args.first:] if args.only in a.name and not (args.skip and args.skip in a.name)]
    breaks = table_of(args.groups, attacks, out=out)
    out(f"\nBreaks ({len(breaks)}): " + ("; ".join(breaks) if breaks else "none"))
    if args.out is not None:
        args.out.write_text("\n".join(lines) + "\n")


def main() -> None:
    cli(__doc__.splitlines()[0], ATTACKS, table)


if __name__ == "__main__":
    main()
