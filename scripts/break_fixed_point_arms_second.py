"""Hostile referee, second and out-of-sample attack on Lemma 2's fixed-point rule, each arm on its own.

    OMP_NUM_THREADS=1 python3 scripts/break_fixed_point_arms_second.py [--groups 20] [--out table.md]

The rule was tuned with the first attack's constructions (``scripts/break_fixed_point_arms.py``) known;
the constructions here are new. Scoring, batches and the way records are read are the first attack's:
per seed a batch (p_{k-1}, p^0, labels, m_k, g_k) and the two reached readouts p^F and p^R, read
through the row's own ``reached`` (with the label-permutation null of ``label_permutations``) and
``fixed_point_decision``; a construction agrees when at most 5% of the groups read an outcome outside
the truth and none reads a direction outside it. At 64 tokens, without the settings added here, a
batch is the first attack's ``batch`` (the same numbers).

Settings added here: a vocabulary other than 64 (``vocab``), labels equal to p_{k-1}'s argmax at every
position (``argmax_labels``: m_k and g_k then lie close to a sharpening of p_{k-1}), and a start equal to
p_{k-1} exactly (``noise`` 0). Per-seed moves (``per_seed``) give seeds whose moves disagree.
Prints one markdown table: construction | truth | outcome share | agrees?
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_ROOT))  # this checkout's packages, not an installed one

from analyses.lemma2.families import Batch, Move, N, label_free  # noqa: E402
from analyses.lemma2.fixed_point import (  # noqa: E402
    ARM_OUTCOMES,
    FixedPointResult,
    FixedPointSeed,
    fixed_point_decision,
)
from zerolock_theory.theory.lemma2 import temper  # noqa: E402
from zerolock_theory.theory.targets import (  # noqa: E402
    arithmetic_target,
    geometric_target,
    label_smooth,
    one_hot,
)


def _first_attack():
    """The first attack's harness (its ``batch``, truths and short names), loaded from its file."""
    name = "break_fixed_point_arms"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, _ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


first = _first_attack()
OWN, OTHER, NONE, UNTESTABLE = ARM_OUTCOMES
SHORT, NO_DIRECTION = first.SHORT, first.NO_DIRECTION
OWN_OWN, BLIND = first.OWN_OWN, first.BLIND


@dataclass(frozen=True)
class Setting(first.Shape):
    """The first attack's batch ``Shape`` plus: vocabulary size, labels at p_{k-1}'s argmax."""

    vocab: int = 64
    argmax_labels: bool = False


def batch(seed: int, s: Setting) -> Batch:
    """The batch of ``seed`` at ``s``: the first attack's at 64 tokens with labels drawn apart from p_{k-1};
    otherwise drawn the same way at ``s.vocab`` tokens, the labels replaced by p_{k-1}'s argmax if asked."""
    if s.vocab == 64 and not s.argmax_labels:
        return first.batch(seed, first.Setting(s.spread, s.noise, s.alpha, s.epsilon))
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(N, s.vocab, generator=g, dtype=torch.float64)
    z0 = torch.randn(N, s.vocab, generator=g, dtype=torch.float64)
    labels = torch.randint(s.vocab, (N,), generator=g)
    log_prev = torch.log_softmax(s.spread * z, -1)
    if s.argmax_labels:
        labels = log_prev.argmax(-1)
    log_start = torch.log_softmax(log_prev + s.noise * z0, -1)
    p_y = label_smooth(one_hot(labels, s.vocab, torch.float64), s.epsilon)
    m = arithmetic_target(p_y, log_prev.exp(), s.alpha)
    g_k = geometric_target(p_y, log_prev.exp(), s.alpha)[0].exp()
    return Batch(seed, log_prev, log_start, labels, m, g_k)


def _renorm(p: torch.Tensor) -> torch.Tensor:
    p = p.clamp_min(1e-12)
    return (p / p.sum(-1, keepdim=True)).log()


def sharpened_toward(name: str, lam: float, tau: float) -> Move:
    """(1−λ)·(p^0 at temperature τ) + λ·t, t = m_k or g_k: toward the target while tempering p^0 (τ < 1 sharpens)."""
    return lambda b: ((1.0 - lam) * temper(b.log_start, tau).exp() + lam * b.target(name)).log()


def toward_mixture(lam: float, w: float = 0.5) -> Move:
    """(1−λ)·p^0 + λ·(w·m_k + (1−w)·g_k): toward a convex combination of the two targets."""
    return lambda b: ((1.0 - lam) * b.log_start.exp() + lam * (w * b.m + (1.0 - w) * b.g)).log()


def overshoot(name: str, lam: float) -> Move:
    """p^0 + λ·(t − p^0) with λ > 1 (past the target on the line from p^0), clipped at 0 and renormalised."""
    return lambda b: _renorm(b.log_start.exp() + lam * (b.target(name) - b.log_start.exp()))


def on_positions(move: Move, other: Move, even: bool = True) -> Move:
    """``move`` on the even positions (odd if not ``even``), ``other`` on the rest."""
    def out(b: Batch) -> torch.Tensor:
        a, c = move(b), other(b)
        mask = (torch.arange(a.shape[0]) % 2 == (0 if even else 1))[:, None]
        return torch.where(mask, a, c)
    return out


def stays() -> Move:
    return lambda b: b.log_start.clone()


def shuffled_move(name: str, lam: float) -> Move:
    """p^0 + π(λ·(t − p^0)): the move toward a target with its vocabulary entries shuffled (a seeded permutation per
    position): the same size and zero sum as the move toward t, a direction drawn at random. Clipped at 0 and
    renormalised."""
    def move(b: Batch) -> torch.Tensor:
        step = lam * (b.target(name) - b.log_start.exp())
        gen = torch.Generator().manual_seed(4_211 * b.seed + 3)
        perm = torch.argsort(torch.rand(step.shape, generator=gen), dim=-1)
        return _renorm(b.log_start.exp() + torch.gather(step, -1, perm))
    return move


def geometric_toward(name: str, lam: float) -> Move:
    """∝ (p^0)^{1−λ}·t^λ: toward a target in logit space."""
    return lambda b: torch.log_softmax((1.0 - lam) * b.log_start + lam * b.target(name).log(), -1)


def toward_prev_power(power: float, lam: float) -> Move:
    """(1−λ)·p^0 + λ·q, q ∝ p_{k-1}^power: toward a sharpening (power > 1) of p_{k-1}; no label used."""
    return lambda b: ((1.0 - lam) * b.log_start.exp() + lam * torch.softmax(power * b.log_prev, -1)).log()


@dataclass(frozen=True)
class Attack:
    """A construction: both arms' moves, the setting, the seeds per group, the accepted outcomes, and optional
    per-seed moves (seed i of each group uses ``per_seed[i]`` when given)."""

    name: str
    forward: Move
    reverse: Move
    truth: tuple[frozenset[str], frozenset[str]]
    setting: Setting = Setting()
    n_seeds: int = 5
    per_seed: tuple[tuple[Move, Move], ...] | None = None


def records(a: Attack, group: int) -> list[FixedPointSeed]:
    """The per-seed records of ``a``'s group ``group``, built as the first attack builds them, with this
    attack's batches and per-seed moves."""
    return first.records(a, group, batch, lambda i: a.per_seed[i] if a.per_seed is not None else (a.forward, a.reverse))


def decide(a: Attack, group: int = 0) -> FixedPointResult:
    return fixed_point_decision(records(a, group), 1, a.setting.alpha, a.setting.epsilon)


def outcomes(a: Attack, group: int = 0) -> tuple[str, str]:
    found = decide(a, group)
    return found.forward_arm.outcome, found.reverse_arm.outcome


def judge(a: Attack, groups: Sequence[int]) -> dict[str, object]:
    """The first attack's scoring (``break_fixed_point_arms.judge``) over ``groups``, with this attack's batches."""
    return first.judge(a, groups, decide)


_m, _g = first._m, first._g


BIG_V = Setting(spread=4.0, vocab=4096)
ARGMAX = Setting(argmax_labels=True)
ALPHA_09, ALPHA_01, EPS_03 = Setting(alpha=0.9), Setting(alpha=0.1), Setting(epsilon=0.3)
START_PREV = Setting(noise=0.0)
GEO_OWN = (first._own(NONE), first._own(NONE))
"""A move along the logit-space path to its own target: its end is that target, and its CE / reverse loss falls, but
in TV it comes as close to the other target as to its own; "none" is accepted, "other's" is not."""
_SPLIT = ((_m(1.0), _m(1.0)),) * 2 + ((_g(1.0), _g(1.0)),) * 3

ATTACKS: tuple[Attack, ...] = (
    Attack("toward own target 50% while sharpening p^0 (tau = 0.7)", sharpened_toward("m", 0.5, 0.7),
           sharpened_toward("g", 0.5, 0.7), OWN_OWN),
    Attack("toward own target 50% while flattening p^0 (tau = 1.5)", sharpened_toward("m", 0.5, 1.5),
           sharpened_toward("g", 0.5, 1.5), OWN_OWN),
    Attack("both toward 0.5 m_k + 0.5 g_k, 100%", toward_mixture(1.0), toward_mixture(1.0), BLIND),
    Attack("both toward 0.75 m_k + 0.25 g_k, 100%", toward_mixture(1.0, 0.75), toward_mixture(1.0, 0.75),
           first.OWN_OTHER),
    Attack("CE overshoots past m_k (1.5x), reverse -> g_k 50%", overshoot("m", 1.5), _g(0.5), OWN_OWN),
    Attack("CE -> m_k 100%, reverse reaches g_k on half the positions only", _m(1.0),
           on_positions(lambda b: b.g.log(), stays()), OWN_OWN),
    Attack("per position: half toward m_k, half toward g_k (both arms), 100%", on_positions(_m(1.0), _g(1.0)),
           on_positions(_m(1.0), _g(1.0)), BLIND),
    Attack("V = 4096, peaked p_(k-1) (spread 4): CE -> m_k, reverse -> g_k, 50%", _m(0.5), _g(0.5), OWN_OWN, BIG_V),
    Attack("V = 4096, peaked p_(k-1): label-free toward p_(k-1), s = 1", label_free("arithmetic", 1.0),
           label_free("geometric", 1.0), BLIND, BIG_V),
    Attack("labels = argmax p_(k-1): CE -> m_k, reverse -> g_k, 50%", _m(0.5), _g(0.5), OWN_OWN, ARGMAX),
    Attack("labels = argmax p_(k-1): label-free toward p_(k-1)^3, 50%", toward_prev_power(3.0, 0.5),
           toward_prev_power(3.0, 0.5), BLIND, ARGMAX),
    Attack("labels = argmax p_(k-1): label-free sharpen p^0 (tau = 0.7)", lambda b: temper(b.log_start, 0.7),
           lambda b: temper(b.log_start, 0.7), BLIND, ARGMAX),
    Attack("alpha = 0.9: CE -> m_k, reverse -> g_k, 80%", _m(0.8), _g(0.8), OWN_OWN, ALPHA_09),
    Attack("alpha = 0.9: exact optima", lambda b: b.m.log(), lambda b: b.g.log(), OWN_OWN, ALPHA_09),
    Attack("alpha = 0.8: CE -> m_k, reverse -> g_k, 80%", _m(0.8), _g(0.8), OWN_OWN, Setting(alpha=0.8)),
    Attack("alpha = 0.1: CE -> m_k, reverse -> g_k, 80%", _m(0.8), _g(0.8), OWN_OWN, ALPHA_01),
    Attack("alpha = 0.9: label-free toward p_(k-1)^3, 50%", toward_prev_power(3.0, 0.5),
           toward_prev_power(3.0, 0.5), BLIND, ALPHA_09),
    Attack("epsilon = 0.3: CE -> m_k, reverse -> g_k, 50%", _m(0.5), _g(0.5), OWN_OWN, EPS_03),
    Attack("epsilon = 0.3: label-free toward p_(k-1), s = 1", label_free("arithmetic", 1.0),
           label_free("geometric", 1.0), BLIND, EPS_03),
    Attack("seeds disagree: 2 seeds both -> m_k, 3 seeds both -> g_k, 100%", _m(1.0), _m(1.0), BLIND,
           per_seed=_SPLIT),
    Attack("random direction, size of the half-way move (shuffled vocabulary)", shuffled_move("m", 0.5),
           shuffled_move("g", 0.5), BLIND),
    Attack("logit space: geometric toward own target, 50%", geometric_toward("m", 0.5), geometric_toward("g", 0.5),
           GEO_OWN),
    Attack("logit space: geometric toward own target, 90%", geometric_toward("m", 0.9), geometric_toward("g", 0.9),
           GEO_OWN),
    Attack("logit space: geometric toward the other's target, 50%", geometric_toward("g", 0.5),
           geometric_toward("m", 0.5), (first._other(NONE), first._other(NONE))),
    Attack("start p^0 = p_(k-1): CE -> m_k, reverse -> g_k, 50%", _m(0.5), _g(0.5), OWN_OWN, START_PREV),
    Attack("start p^0 = p_(k-1): label-free toward p_(k-1)^3, 50%", toward_prev_power(3.0, 0.5),
           toward_prev_power(3.0, 0.5), BLIND, START_PREV),
)


def attack(name: str) -> Attack:
    return first.attack(name, ATTACKS)


def table(groups: int, attacks: Sequence[Attack] = ATTACKS, out: Callable[[str], None] = print) -> list[str]:
    """Print the first attack's markdown table for ``attacks``; return the names of those that do not agree."""
    return first.table(groups, attacks, out, decide, "5 seeds each")


def main() -> None:
    first.cli(__doc__.splitlines()[0], ATTACKS, table, parts=True)


if __name__ == "__main__":
    main()
