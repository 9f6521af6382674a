"""Hostile referee: constructions with known answers against Assumption 5's and Theorem 1 (b)'s rules.

    OMP_NUM_THREADS=1 PYTHONPATH=. python scripts/break_a5_drift.py --reps 50      # about 6 min, one core
    OMP_NUM_THREADS=1 PYTHONPATH=. python scripts/break_a5_drift.py --reps 300 --only "autocorrelated"

Every construction builds synthetic ``scaling`` probe frames (the keys of ``analyses.a5_families.frame``)
with, at each scaled step t of a seed (η_t = η_0/(t+1)^κ),

    φ(c) = c·a_t + c²·b_t + c³·d_t,   drift(c) = c·a^drift_t + c²·b^drift_t,   q(c) = c²·η_t²·m_t,

plus float noise of ``rel``·|x(c=1)| and ``abs`` (absolute) per value, a random direction
φ(u, c) = c·a_u + c²·b_u and its antithetic mirror −c·a_u + c²·b_u. Each group (``--seeds``
seeds) goes through ``analyses.scaling.group_scaling(runs, "implemented")``, the rows' own
code: ``group.outcome`` (ρ_t along the run, rule 1), ``group.uniform`` and ``group.chance``
(rule 2, with the antithetic check), ``group.order.outcome`` (rule 3).

Truths are those of the construction: for the trend of ρ_t, the law of ρ_t as t → ∞ under the
construction continued ("grows": ρ_t → ∞; "no growth": ρ_t bounded); for the uniform statement,
whether some a_t > 0; for the chance statement, the population share of a_t > 0 (zeros count as
not positive, as in the rule) against ½; for the order, whether the drift's first-order
coefficient a^drift_t is non-zero somewhere and the population share of positive ones among the
non-zero. A rule is "broken" on a construction when a word contradicting the truth comes out in
at least ``BROKEN_RATE`` of the groups (the intervals are 95%: a two-sided error is 5% at most,
and 5 of 50 groups lies above that at the 4% level).

Prints one markdown table per rule and a scan of the classifier's float-noise threshold.
Writes nothing.
"""

from __future__ import annotations

import argparse
import sys
import time
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analyses.a5_families import FACTORS
from analyses.scaling import group_scaling
from analyses.step_limits import step_signs
from zerolock_theory.metric_keys import scaling_key, scaling_step_key

OBJ = "implemented"
BROKEN_RATE = 0.10
C = np.asarray(FACTORS)


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


def build_frame(con: Construction, seed: int, i: int, gp: object) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    t = np.arange(con.steps, dtype=float) * con.every
    eta = con.eta0 / (t + 1.0) ** con.kappa
    n = con.steps
    got = con.coef(t, eta, rng, i, gp)
    a = np.asarray(got.get("a", np.zeros(n)), float) * np.ones(n)
    b = np.asarray(got.get("b", 0.1 * eta**2), float) * np.ones(n)
    d = np.asarray(got.get("d", 0.05 * eta**3 * rng.normal(size=n)), float) * np.ones(n)
    a_dr = np.asarray(got.get("a_drift", a), float) * np.ones(n)
    b_dr = np.asarray(got.get("b_drift", b + eta**2 * rng.normal(size=n)), float) * np.ones(n)
    m = np.asarray(got.get("m", 1.0 + 0.1 * np.abs(rng.normal(size=n))), float) * np.ones(n)
    a_u = np.asarray(got.get("a_u", eta * rng.normal(size=n)), float) * np.ones(n)
    b_u = np.asarray(got.get("b_u", 0.1 * eta**2 * rng.normal(size=n)), float) * np.ones(n)
    c = C[None, :]

    def noisy(x: np.ndarray) -> np.ndarray:
        return x + (con.rel * np.abs(x[:, :1]) + con.abs_noise) * rng.normal(size=x.shape)

    phi = noisy(c * a[:, None] + c**2 * b[:, None] + c**3 * d[:, None])
    drift = noisy(c * a_dr[:, None] + c**2 * b_dr[:, None])
    q = c**2 * (eta**2 * m)[:, None]
    plus = noisy(c * a_u[:, None] + c**2 * b_u[:, None])
    minus = noisy(-c * a_u[:, None] + c**2 * b_u[:, None])
    rec: dict[str, np.ndarray] = {"step": t.astype(int), "train/lr": eta}
    for direction, p, dr in (("actual", phi, drift), ("random", plus, None), ("antithetic", minus, None)):
        for j, cj in enumerate(FACTORS):
            rec[scaling_key(OBJ, cj, "phi", direction)] = p[:, j]
            rec[scaling_key(OBJ, cj, "q", direction)] = q[:, j]
            rec[scaling_key(OBJ, cj, "ratio", direction)] = np.maximum(p[:, j], 0.0) / q[:, j]
            if dr is not None:
                rec[scaling_key(OBJ, cj, "drift", direction)] = dr[:, j]
        rec[scaling_step_key(OBJ, "defined", direction)] = np.ones(n, bool)
    return pd.DataFrame(rec)


def run(con: Construction, reps: int) -> None:
    along, uniform, chance, order = Counter(), Counter(), Counter(), Counter()
    pairs = one = 0
    gammas: list[float] = []
    for rep in range(reps):
        base = 7919 * (rep + 1) + 104729 * (zlib.crc32(f"{con.name} {design(con)}".encode()) % 100000)
        grng = np.random.default_rng(base)
        gp = con.group(grng, con.seeds) if con.group else None
        runs = [(f"s{i}", build_frame(con, base + 1 + i, i, gp)) for i in range(con.seeds)]
        g = group_scaling(runs, OBJ)
        word = g.outcome + ("*" if g.reason == "grows_second_order" else "")
        along[word] += 1
        uniform[g.uniform] += 1
        chance[g.chance] += 1
        order[g.order.outcome] += 1
        if g.along is not None and g.along.gamma is not None:
            gammas.append(g.along.gamma.estimate)
        pairs += g.antithetic_pairs
        one += g.antithetic_one_positive
    con.results = {"along": along, "uniform": uniform, "chance": chance, "order": order,
                   "anti": (one, pairs), "reps": reps,
                   "gamma": float(np.mean(gammas)) if gammas else float("nan")}


SHORT = {
    "grows": "grows", "grows*": "grows(2nd-order flag)", "no growth": "no growth", "not testable": "n.t.",
    "holds": "holds", "fails at some scaled steps": "fails",
    "more often than chance": "more", "less often than chance": "less", "not distinguished from chance": "n.d.",
    "second order": "2nd", "first order, positive more often than chance": "1st+",
    "first order, negative more often than chance": "1st−", "first order, sign not distinguished from chance": "1st±",
}


def _rates(counts: Counter, reps: int) -> str:
    return ", ".join(f"{SHORT.get(w, w)} {n / reps:.2f}" for w, n in counts.most_common())


def _wrong(kind: str, truth: str | None, counts: Counter, reps: int) -> tuple[float, str]:
    """(rate of words contradicting the truth, verdict)."""
    if truth is None:
        return 0.0, "n/a"
    if kind == "along":
        bad = {"grows": ["no growth"], "no growth": ["grows", "grows*"]}[truth]
    elif kind == "uniform":
        bad = {"holds": ["fails at some scaled steps"], "fails at some scaled steps": ["holds"]}[truth]
    elif kind == "chance":
        bad = {"more often than chance": ["less often than chance"],
               "less often than chance": ["more often than chance"],
               "not distinguished from chance": ["more often than chance", "less often than chance"]}[truth]
    else:
        first = [w for w in SHORT if w.startswith("first order")]
        bad = {"second order": first,
               "first order, positive more often than chance": ["second order",
                                                                "first order, negative more often than chance"],
               "first order, negative more often than chance": ["second order",
                                                                "first order, positive more often than chance"],
               "first order, sign not distinguished from chance": [
                   "second order", "first order, positive more often than chance",
                   "first order, negative more often than chance"]}[truth]
    rate = sum(counts[w] for w in bad) / reps
    if rate >= BROKEN_RATE:
        return rate, f"**yes** ({rate:.2f} wrong)"
    return rate, "no" if rate == 0 else f"no ({rate:.2f} wrong)"


def _truth(x: str | None) -> str:
    return "no answer by construction" if x is None else SHORT.get(x, x)


def design(con: Construction) -> str:
    lr = "const eta" if con.kappa == 0 else f"k={con.kappa:g}"
    noise = f", rel {con.rel:g}" if con.rel != 1e-12 else ""
    noise += f", abs {con.abs_noise:g}" if con.abs_noise else ""
    return f"{con.seeds}x{con.steps} every {con.every}, {lr}{noise}"


def tables(cons: list[Construction]) -> None:
    for rule, kinds in ((1, ("along",)), (2, ("uniform", "chance")), (3, ("order",))):
        title = {1: "Rule 1: rho_t along the run (group.outcome)",
                 2: "Rule 2: uniform in the step (group.uniform), more often than chance (group.chance), "
                    "antithetic check", 3: "Rule 3: the drift's order (group.order.outcome)"}[rule]
        print(f"\n### {title}\n")
        if rule == 2:
            print("| construction | design | truth (uniform; chance) | uniform rates | chance rates "
                  "| antithetic one-positive/pairs | broken? (uniform; chance) |")
            print("|---|---|---|---|---|---|---|")
        else:
            extra = " mean gamma estimate |" if rule == 1 else ""
            print(f"| construction | design | truth | rates of the outcome words |{extra} broken? |")
            print("|---|---|---|---|---|" + ("---|" if rule == 1 else ""))
        for con in cons:
            if rule not in con.rules:
                continue
            r, reps = con.results, con.results["reps"]
            if rule == 2:
                _, bu = _wrong("uniform", con.uniform, r["uniform"], reps)
                _, bc = _wrong("chance", con.chance, r["chance"], reps)
                one, pairs = r["anti"]
                anti = f"{one}/{pairs}" + (f" ({one / pairs:.2f})" if pairs else "")
                print(f"| {con.name} | {design(con)} | {_truth(con.uniform)}; {_truth(con.chance)} | "
                      f"{_rates(r['uniform'], reps)} | {_rates(r['chance'], reps)} | {anti} | {bu}; {bc} |")
            else:
                kind = kinds[0]
                truth = con.along if rule == 1 else con.order
                _, b = _wrong(kind, truth, r[kind], reps)
                note = f" ({con.note})" if con.note and rule == 1 else ""
                gamma = f" {r['gamma']:.2f} |" if rule == 1 else ""
                print(f"| {con.name}{note} | {design(con)} | {_truth(truth)} | {_rates(r[kind], reps)} |{gamma} {b} |")


def noise_scan(steps: int = 20000) -> None:
    """Per-step calls of step_signs on a zero first-order term (φ = c²·b + c³·d) with float noise of
    ε·|φ(1)|, and on pure absolute noise (an exact optimum)."""
    print("\n### Classifier threshold: a zero first-order term (a = 0, b ~ N(0.5, 1), d = 0.05 N) "
          "with noise eps*|phi(1)| per value\n")
    print("| eps | called 0 | called +/- (wrong) | unresolved | P(all 155 steps of a 5x31 group called 0) |")
    print("|---|---|---|---|---|")
    rng = np.random.default_rng(1)
    c = C[None, :]
    b = 0.5 + rng.normal(size=(steps, 1))
    d = 0.05 * rng.normal(size=(steps, 1))
    clean = c**2 * b + c**3 * d
    for eps in (1e-9, 1e-8, 1e-7, 3e-7, 1e-6, 2e-6, 3e-6, 5e-6, 1e-5, 3e-5, 1e-4):
        phi = clean + eps * np.abs(clean[:, :1]) * rng.normal(size=clean.shape)
        s = step_signs(C, phi)
        zero, nz, un = np.mean(s == 0), np.mean(np.abs(s) == 1), np.mean(np.isnan(s))
        print(f"| {eps:g} | {zero:.4f} | {nz:.4f} | {un:.4f} | {zero**155:.3f} |")
    phi = 1e-12 * rng.normal(size=clean.shape)
    s = step_signs(C, phi)
    print(f"| pure noise (phi = 1e-12 N, any scale) | {np.mean(s == 0):.4f} | {np.mean(np.abs(s) == 1):.4f} "
          f"| {np.mean(np.isnan(s)):.4f} | {np.mean(s == 0) ** 155:.3f} |")
    print("\n### Classifier threshold: first order hidden by curvature (a = r*(b + d), b = d = 1, no noise)\n")
    print("| r = a/(b+d) | called + | called 0 | unresolved |")
    print("|---|---|---|---|")
    for r in (1e-2, 3e-3, 2e-3, 1.5e-3, 1e-3, 5e-4, 1e-4):
        phi = c * (r * 2.0) + c**2 + c**3
        s = step_signs(C, phi)
        print(f"| {r:g} | {np.mean(s == 1):.2f} | {np.mean(s == 0):.2f} | {np.mean(np.isnan(s)):.2f} |")


# ---------------------------------------------------------------- constructions

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=50, help="groups per construction")
    parser.add_argument("--only", default="", help="run only constructions whose name contains this")
    args = parser.parse_args()
    cons = [c for c in constructions() if args.only in c.name]
    start = time.time()
    for k, con in enumerate(cons):
        run(con, args.reps)
        print(f"[{k + 1}/{len(cons)}] {con.name} ({design(con)}) {time.time() - start:.0f}s", file=sys.stderr)
    print(f"{args.reps} groups per construction; truth and broken? as in the module docstring. "
          "Words: grows(2nd-order flag) = grows with reason grows_second_order; n.t. = not testable; "
          "n.d. = not distinguished from chance; 1st+/1st-/1st± = first order, positive/negative/sign not "
          "distinguished from chance.")
    tables(cons)
    noise_scan()


if __name__ == "__main__":
    main()
