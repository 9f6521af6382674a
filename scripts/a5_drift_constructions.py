"""The constructions of ``break_a5_drift.py``: synthetic scaled steps with known answers.

Each ``Construction`` names its coefficients (``coef``: a_t, b_t, d_t, the drift's, q's m_t and the
random direction's, as functions of the step t and η_t) and the truth of every rule on it: ρ_t's
trend along the run (rule 1), the uniform and the chance statement (rule 2), the drift's order
(rule 3). ``constructions()`` is the catalogue the referee runs; ``break_a5_drift.py`` builds the
probe frames from it and tallies the rules' words.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Coef", "Construction", "constructions"]


def _warm(t: np.ndarray, tau: float) -> np.ndarray:
    return (1.0 - np.exp(-(t + 1.0) / tau)) ** 2


def _markov_signs(rng: np.random.Generator, n: int, stay: float) -> np.ndarray:
    """±1 with P(+) = ½ marginally and lag-1 correlation 2·stay − 1."""
    s = np.empty(n)
    s[0] = rng.choice([-1.0, 1.0])
    flips = rng.random(n) >= stay
    for i in range(1, n):
        s[i] = -s[i - 1] if flips[i] else s[i - 1]
    return s


Coef = Callable[..., dict]


@dataclass
class Construction:
    name: str
    coef: Coef  # (t, eta, rng, i, gp) -> dict of a, b, d, a_drift, b_drift, m, a_u, b_u (any subset)
    along: str | None  # truth: "grows" / "no growth" / None (no answer)
    uniform: str | None  # "holds" / "fails at some scaled steps"
    chance: str | None  # "more often than chance" / "less often than chance" / "not distinguished from chance"
    order: str | None  # "second order" / "first order, positive ..." / "first order, sign not distinguished ..."
    rules: tuple[int, ...] = (1, 2, 3)
    steps: int = 31
    every: int = 1
    seeds: int = 5
    eta0: float = 0.1
    kappa: float = 0.5
    rel: float = 1e-12
    abs_noise: float = 0.0
    group: Callable[[np.random.Generator, int], object] | None = None
    note: str = ""
    results: dict = field(default_factory=dict)


def constructions() -> list[Construction]:
    G, NG, HOLD, FAIL = "grows", "no growth", "holds", "fails at some scaled steps"
    MORE, LESS, ND = "more often than chance", "less often than chance", "not distinguished from chance"
    SEC, POS = "second order", "first order, positive more often than chance"
    SGN = "first order, sign not distinguished from chance"
    out: list[Construction] = []
    add = out.append

    # references
    add(Construction("ref: a = eta", lambda t, e, r, i, g: {"a": e}, G, FAIL, MORE, POS))
    add(Construction("ref: a = 0.5 eta^2", lambda t, e, r, i, g: {"a": 0.5 * e**2}, NG, FAIL, MORE, POS))

    # warm-ups of a bounded rho_t
    def warm2(tau: float) -> Coef:  # second order: a = 0
        return lambda t, e, r, i, g: {"a": 0.0 * e, "b": e**2 * (0.5 + r.normal(size=t.size)) * _warm(t, tau)}

    def warm1(tau: float) -> Coef:  # first order of order eta^2 warming up: rho_t -> const
        return lambda t, e, r, i, g: {"a": 0.5 * e**2 * _warm(t, tau)}

    for tau in (3, 10, 30):
        add(Construction(f"warm-up, a = 0, b ~ eta^2 w(t), tau = {tau}", warm2(tau), NG, HOLD, LESS, SEC,
                         note="rho_t -> const"))
    for tau in (30, 100, 300):
        add(Construction(f"warm-up, a = 0, b ~ eta^2 w(t), tau = {tau}", warm2(tau), NG, HOLD, LESS, SEC, every=33,
                         note="rho_t -> const"))
    for tau in (3, 10, 30):
        add(Construction(f"warm-up, a = 0.5 eta^2 w(t), tau = {tau}", warm1(tau), NG, FAIL, MORE, POS,
                         note="rho_t -> const"))
    for tau in (100, 300):
        add(Construction(f"warm-up, a = 0.5 eta^2 w(t), tau = {tau}", warm1(tau), NG, FAIL, MORE, POS, every=33,
                         note="rho_t -> const"))

    # transients
    add(Construction("late transient: a = 0.5 eta^2, x10 on the last quarter",
                     lambda t, e, r, i, g: {"a": 0.5 * e**2 * np.where(t >= 0.75 * t.max(), 10.0, 1.0)},
                     NG, FAIL, MORE, POS, note="rho_t bounded by 10x"))
    add(Construction("late transient: a = 0.5 eta^2, x10 on the third quarter only",
                     lambda t, e, r, i, g: {"a": 0.5 * e**2 * np.where((t >= 0.5 * t.max()) & (t < 0.75 * t.max()),
                                                                          10.0, 1.0)},
                     NG, FAIL, MORE, POS, note="rho_t bounded by 10x"))
    for k in (5, 20):
        add(Construction(f"early transient over growth: a = eta, x{k} on the first 4 steps",
                         lambda t, e, r, i, g, k=k: {"a": e * np.where(t < 4, float(k), 1.0)},
                         G, FAIL, MORE, POS, note="rho_t ~ (t+1)^0.5 after t = 4"))

    for every in (1, 33):
        add(Construction("early transient over growth: a = eta, x20 at t = 0 only",
                         lambda t, e, r, i, g: {"a": e * np.where(t == 0, 20.0, 1.0)},
                         G, FAIL, MORE, POS, every=every, note="rho_t ~ (t+1)^0.5 for t >= 1"))

    # heavy-tailed rho_t (q tiny at 3% of steps: rho x1000, stationary and bounded)
    def spikes(base: Callable) -> Coef:
        return lambda t, e, r, i, g: {"a": base(e), "m": np.where(r.random(t.size) < 0.03, 1e-3, 1.0)}

    add(Construction("heavy-tailed rho: a = 0.5 eta^2, q/1000 at 3% of steps", spikes(lambda e: 0.5 * e**2),
                     NG, FAIL, MORE, POS, note="stationary, bounded"))
    add(Construction("heavy-tailed rho: a = 0.5 eta^2, q/1000 at 3% of steps", spikes(lambda e: 0.5 * e**2),
                     NG, FAIL, MORE, POS, every=33, note="stationary, bounded"))
    add(Construction("heavy-tailed rho on growth: a = eta, q/1000 at 3% of steps", spikes(lambda e: e),
                     G, FAIL, MORE, POS))

    # zero-mean first-order noise
    for s in (0.01, 0.1, 1.0, 10.0):
        add(Construction(f"zero-mean: a = {s:g} eta xi, b = 0.5 eta^2",
                         lambda t, e, r, i, g, s=s: {"a": s * e * r.normal(size=t.size), "b": 0.5 * e**2},
                         G, FAIL, ND, SGN))
    for s in (0.003, 0.03, 0.3):
        add(Construction(f"bounded + zero-mean: a = 0.5 eta^2 + {s:g} eta xi",
                         lambda t, e, r, i, g, s=s: {"a": 0.5 * e**2 + s * e * r.normal(size=t.size)},
                         G, FAIL, MORE, POS, note="grows once eta < 2 sigma"))
    add(Construction("tiny zero-mean: a = 1e-5 eta xi, b = 0.5 eta^2",
                     lambda t, e, r, i, g: {"a": 1e-5 * e * r.normal(size=t.size), "b": 0.5 * e**2},
                     G, FAIL, ND, SGN, note="grows once eta < 2e-5"))

    # slow growth: rho_t ~ (t+1)^g with 0 < g < kappa/2 (unbounded, below the rule's "no growth" line),
    # clean and with a lognormal spread of q (m = exp(0.5 N)); the bounded control has the same spread
    add(Construction("slow growth, clean: a = 0.5 eta^1.8 (rho ~ (t+1)^0.1)",
                     lambda t, e, r, i, gp: {"a": 0.5 * e**1.8, "b": 0.1 * e**1.8}, G, FAIL, MORE, POS,
                     note="rho_t unbounded"))
    for pw, g in ((1.8, 0.1), (1.6, 0.2)):
        for every in (1, 33):
            add(Construction(f"slow growth, noisy q: a = 0.5 eta^{pw:g} (rho ~ (t+1)^{g:g})",
                             lambda t, e, r, i, gp, pw=pw: {"a": 0.5 * e**pw, "b": 0.1 * e**pw,
                                                            "m": np.exp(0.5 * r.normal(size=t.size))},
                             G, FAIL, MORE, POS, every=every, note="rho_t unbounded"))
    for every in (1, 33):
        add(Construction("bounded, noisy q: a = 0.5 eta^2, m = exp(0.5 N)",
                         lambda t, e, r, i, gp: {"a": 0.5 * e**2, "m": np.exp(0.5 * r.normal(size=t.size))},
                         NG, FAIL, MORE, POS, every=every))

    # heteroscedastic seeds
    add(Construction("hetero: 4 seeds a = eta^3 (rho ~ eta), 1 seed a = eta",
                     lambda t, e, r, i, g: ({"a": e**3, "b": 0.1 * e**3, "d": 0.0 * e} if i != g else {"a": e}),
                     G, FAIL, MORE, POS, group=lambda gr, k: int(gr.integers(k)),
                     note="truth: rho_t grows on 1 of 5 runs"))
    add(Construction("hetero: 4 seeds a = 0.5 eta^2, 1 seed a = eta",
                     lambda t, e, r, i, g: ({"a": 0.5 * e**2} if i != g else {"a": e}),
                     G, FAIL, MORE, POS, group=lambda gr, k: int(gr.integers(k)),
                     note="truth: rho_t grows on 1 of 5 runs"))
    add(Construction("hetero: a = eta (mu_i + xi), one seed mu = +-3 (random sign), others 0",
                     lambda t, e, r, i, g: {"a": e * (g[i] + r.normal(size=t.size))},
                     G, FAIL, ND, SGN,
                     group=lambda gr, k: np.where(np.arange(k) == gr.integers(k), gr.choice([-3.0, 3.0]), 0.0)))
    add(Construction("hetero: a = eta (mu_i + xi), mu_i ~ N(0, 1) per seed",
                     lambda t, e, r, i, g: {"a": e * (g[i] + r.normal(size=t.size))},
                     G, FAIL, ND, SGN, group=lambda gr, k: gr.normal(size=k)))
    add(Construction("hetero: one seed 1000x larger noise, a = eta (0.5 + xi)",
                     lambda t, e, r, i, g: {"a": e * (0.5 + (1000.0 if i == g else 1.0) * r.normal(size=t.size))},
                     G, FAIL, MORE, POS, group=lambda gr, k: int(gr.integers(k))))

    # autocorrelated signs
    for stay in (0.9, 0.97):
        add(Construction(f"autocorrelated signs: a = eta s_t, P(stay) = {stay:g}",
                         lambda t, e, r, i, g, stay=stay: {"a": e * _markov_signs(r, t.size, stay)},
                         G, FAIL, ND, SGN))
    add(Construction("autocorrelated signs: a = 0.5 eta^2 s_t, P(stay) = 0.97",
                     lambda t, e, r, i, g: {"a": 0.5 * e**2 * _markov_signs(r, t.size, 0.97)},
                     NG, FAIL, ND, SGN))

    # exact optimum: grad R = 0, so a = 0 along every direction; phi = 0 up to absolute float noise
    def optimum(t, e, r, i, g):
        z = 0.0 * e
        return {"a": z, "b": z, "d": z, "a_drift": z, "b_drift": z, "a_u": z}

    add(Construction("exact optimum, exact zeros", optimum, NG, HOLD, LESS, SEC, rel=0.0))
    for an in (1e-15, 1e-12, 1e-9):
        add(Construction(f"exact optimum, phi = drift = 0 + {an:g} N", optimum, NG, HOLD, LESS, SEC, rel=0.0,
                         abs_noise=an, note="rho_t = 0 exactly"))

    # float noise on a zero first-order term
    def second(t, e, r, i, g):
        return {"a": 0.0 * e, "b": e**2 * (0.5 + r.normal(size=t.size))}

    for eps in (1e-8, 1e-6, 3e-6, 1e-5, 1e-4):
        add(Construction(f"a = 0, b = eta^2 (0.5 + xi), noise {eps:g} |phi(1)|", second, NG, HOLD, LESS, SEC,
                         rel=eps))
    add(Construction("a = 0.5 eta^2, absolute noise 1e-8", lambda t, e, r, i, g: {"a": 0.5 * e**2},
                     NG, FAIL, MORE, POS, every=33, abs_noise=1e-8))

    # curvature much larger than the first-order term (all positive, rho_t bounded)
    for rr in (1e-2, 2e-3, 1e-3, 1e-4):
        add(Construction(f"curvature: a = {rr:g} (b + d), b = d = eta^2",
                         lambda t, e, r, i, g, rr=rr: {"a": 2 * rr * e**2, "b": e**2, "d": e**2,
                                                       "b_drift": 2 * e**2},
                         NG, FAIL, MORE, POS))

    # few scaled steps, few seeds
    for n in (10, 20):
        add(Construction("few steps: a = eta", lambda t, e, r, i, g: {"a": e}, G, FAIL, MORE, POS, steps=n))
        add(Construction("few steps: a = 0.5 eta^2", lambda t, e, r, i, g: {"a": 0.5 * e**2}, NG, FAIL, MORE, POS,
                         steps=n))
        add(Construction("few steps: a = eta xi", lambda t, e, r, i, g: {"a": e * r.normal(size=t.size)},
                         G, FAIL, ND, SGN, steps=n))
    add(Construction("3 seeds: a = eta", lambda t, e, r, i, g: {"a": e}, G, FAIL, MORE, POS, seeds=3))
    add(Construction("3 seeds: a = 0.5 eta^2", lambda t, e, r, i, g: {"a": 0.5 * e**2}, NG, FAIL, MORE, POS,
                     seeds=3))
    add(Construction("3 seeds: a = eta xi", lambda t, e, r, i, g: {"a": e * r.normal(size=t.size)},
                     G, FAIL, ND, SGN, seeds=3))
    add(Construction("3 seeds: a = eta (0.3 + xi)", lambda t, e, r, i, g: {"a": e * (0.3 + r.normal(size=t.size))},
                     G, FAIL, MORE, POS, seeds=3))

    # spacing: every step over 32 against every 33rd step over 1000
    for every, n in ((1, 32), (33, 31)):
        add(Construction("spacing: a = eta", lambda t, e, r, i, g: {"a": e}, G, FAIL, MORE, POS, steps=n,
                         every=every))
        add(Construction("spacing: a = 0.5 eta^2", lambda t, e, r, i, g: {"a": 0.5 * e**2}, NG, FAIL, MORE, POS,
                         steps=n, every=every))
        add(Construction("spacing: a = eta xi", lambda t, e, r, i, g: {"a": e * r.normal(size=t.size)},
                         G, FAIL, ND, SGN, steps=n, every=every))
        add(Construction("spacing: a = 0.5 eta^2 + 0.03 eta xi",
                         lambda t, e, r, i, g: {"a": 0.5 * e**2 + 0.03 * e * r.normal(size=t.size)},
                         G, FAIL, MORE, POS, steps=n, every=every))

    # constant step size
    add(Construction("constant step: a = eta (rho_t constant)", lambda t, e, r, i, g: {"a": e},
                     NG, FAIL, MORE, POS, kappa=0.0, note="rho_t = 1/eta for all t"))
    add(Construction("constant step: a = eta^2 (t+1)^0.5 (rho_t grows)",
                     lambda t, e, r, i, g: {"a": e**2 * np.sqrt(t + 1.0)}, G, FAIL, MORE, POS, kappa=0.0))
    add(Construction("constant step: a = eta^2 (t+1)^0.5", lambda t, e, r, i, g: {"a": e**2 * np.sqrt(t + 1.0)},
                     G, FAIL, MORE, POS, kappa=0.0, every=33))
    add(Construction("slow decay kappa = 0.15: a = eta", lambda t, e, r, i, g: {"a": e}, G, FAIL, MORE, POS,
                     kappa=0.15))
    return out
