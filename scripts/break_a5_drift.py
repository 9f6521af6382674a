"""Hostile referee: constructions with known answers against Assumption 5's and Theorem 1 (b)'s rules.

    OMP_NUM_THREADS=1 PYTHONPATH=. python scripts/break_a5_drift.py --reps 50
    OMP_NUM_THREADS=1 PYTHONPATH=. python scripts/break_a5_drift.py --reps 300 --only "autocorrelated"

Every construction (the catalogue: ``a5_drift_constructions.py``) builds synthetic ``scaling`` probe
frames (the keys of ``analyses.assumption5.families.frame``) with, at each scaled step t of a seed
(η_t = η_0/(t+1)^κ),

    φ(c) = c·a_t + c²·b_t + c³·d_t,   drift(c) = c·a^drift_t + c²·b^drift_t,   q(c) = c²·η_t²·m_t,

plus float noise of ``rel``·|x(c=1)| and ``abs`` (absolute) per value, a random direction
φ(u, c) = c·a_u + c²·b_u and its antithetic mirror −c·a_u + c²·b_u. Each group (``--seeds``
seeds) goes through ``analyses.assumption5.scaling.group_scaling(runs, "implemented")``, the rows' own
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

import numpy as np
import pandas as pd
from a5_drift_constructions import Construction, constructions

from analyses.assumption5.families import FACTORS
from analyses.assumption5.scaling import group_scaling
from analyses.assumption5.step_limits import step_signs
from zerolock_theory.records import LR, SCALING, SCALING_STEP

OBJ = "implemented"
BROKEN_RATE = 0.10
C = np.asarray(FACTORS)


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
    rec: dict[str, np.ndarray] = {"step": t.astype(int), LR: eta}
    for direction, p, dr in (("actual", phi, drift), ("random", plus, None), ("antithetic", minus, None)):
        for j, cj in enumerate(FACTORS):
            rec[SCALING.key(OBJ, cj, "phi", direction)] = p[:, j]
            rec[SCALING.key(OBJ, cj, "q", direction)] = q[:, j]
            rec[SCALING.key(OBJ, cj, "ratio", direction)] = np.maximum(p[:, j], 0.0) / q[:, j]
            if dr is not None:
                rec[SCALING.key(OBJ, cj, "drift", direction)] = dr[:, j]
        rec[SCALING_STEP.key(OBJ, "defined", direction)] = np.ones(n, bool)
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
