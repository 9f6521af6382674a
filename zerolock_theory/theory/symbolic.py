"""Symbolic derivations of the docs/MATH.md identities with sympy ("Local losses", "Lemma 1").

Each function derives one statement from scratch and returns a ``Derivation``: the labelled
sympy expressions of the derivation and ``holds`` (the statement was verified exactly).
``all_derivations`` runs them all (cached); ``Derivation.render`` prints one readably.

* the minimizers of ℓ^F and ℓ^R from the Lagrangian (KKT) conditions for V = 2 and 3,
  equal to m_k and g_k; both losses are strictly convex on the open simplex (positive
  diagonal Hessian), so the stationary point is the minimizer;
* ℓ^R_k(p) = KL(p ‖ g_k) − log Z_k, ℓ^F_k(p) = KL(m_k ‖ p) + H(m_k) − (1-α)H(p_{k-1}),
  CE(p_y, p) = KL(p_y ‖ p) + H(p_y) (the difference simplifies to 0);
* the review's two-token check: p_y = (1,0), p_{k-1} = p = (½,½): KL(p ‖ p_y) = ∞ while
  CE(p_y, p) = log 2;
* Lemma 1: the entropy mirror step on KL(p ‖ p_y) is g_k, the Euclidean step on
  ½‖p − p_y‖² is m_k, and the entropy step on CE(p_y, p) is not m_k (a counterexample).
* Proposition 1 ("Proposition 1 and depth"): what the losses imply for every pair of readouts
  p_{k-1} = q, p_k = p, with δ_k = ℓ_k(p) − min ℓ_k and the loss's own target t = p_y^ε:
  forward, α·(CE(t, q) + δ_k/α − CE(t, p)) = [ℓ^F(q) − min ℓ^F] + (1-α)·KL(q ‖ p);
  reverse, α·(KL(q ‖ t) + δ_k/α − KL(p ‖ t)) = [ℓ^R(q) − min ℓ^R] + (1-α)·KL(p ‖ q).
  Both right sides are ≥ 0 (a gap and a KL), so CE_k ≤ CE_{k-1} + δ_k/α (forward) and
  KL(p_k ‖ t) ≤ KL(p_{k-1} ‖ t) + δ_k/α (reverse) hold for every input, α ∈ (0, 1]
  (``proposition1_slack``). The transcription without 1/α and with the task CE is false: a
  reverse chunk at its optimum (δ_k = 0) after a confident p_{k-1}(y) = 0.99 > 1 − ε/2 has
  CE_k > CE_{k-1} (``proposition1_transcription``).

Symbols y_v, q_v, p_v stand for p_y, p_{k-1}, p; α ∈ (0, 1).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import sympy as sp

from zerolock_theory.theory import toy

__all__ = [
    "Derivation",
    "all_derivations",
    "decompositions",
    "forward_minimizer",
    "lemma1_steps",
    "mirror_counterexample",
    "proposition1_slack",
    "proposition1_transcription",
    "reverse_minimizer",
    "two_token_check",
]

ALPHA = sp.Symbol("alpha", positive=True)


@dataclass(frozen=True)
class Derivation:
    """One derivation: a claim, its labelled steps (sympy expressions) and whether it holds."""

    name: str
    claim: str
    steps: tuple[tuple[str, sp.Basic], ...]
    holds: bool

    def __post_init__(self) -> None:
        if not self.name or not self.claim:
            raise ValueError("a derivation needs a name and a claim")

    def render(self, pretty: bool = False) -> str:
        """Readable text: status, claim, then one line (or block) per step."""
        lines = [f"[{'PASS' if self.holds else 'FAIL'}] {self.name}", f"  claim: {self.claim}"]
        for label, expr in self.steps:
            text = sp.pretty(expr, use_unicode=True) if pretty else sp.sstr(expr)
            body = text.replace("\n", "\n      ")
            lines.append(f"  {label}:\n      {body}" if "\n" in text else f"  {label}: {body}")
        return "\n".join(lines)


def _zip(a: Sequence, b: Sequence) -> zip:
    return zip(a, b, strict=True)


def _symbols(name: str, vocab: int) -> list[sp.Symbol]:
    return list(sp.symbols(f"{name}1:{vocab + 1}", positive=True))


def _is_zero(expr: sp.Expr) -> bool:
    return sp.simplify(sp.expand_log(sp.expand(expr), force=True)) == 0


def _entropy(r: Sequence[sp.Expr]) -> sp.Expr:
    return -sum(ri * sp.log(ri) for ri in r)


def _kl(p: Sequence[sp.Expr], q: Sequence[sp.Expr]) -> sp.Expr:
    """KL(p ‖ q) for symbolic positive entries."""
    return sum(pi * sp.log(pi / qi) for pi, qi in _zip(p, q))


def _convex(loss: sp.Expr, p: Sequence[sp.Symbol]) -> bool:
    """Hessian in p diagonal with positive entries for every α ∈ (0,1) (α = 1/(1+t), t > 0)."""
    t = sp.Symbol("t", positive=True)
    hess = sp.hessian(loss, p).subs(ALPHA, 1 / (1 + t))
    off = all(hess[i, j] == 0 for i in range(len(p)) for j in range(len(p)) if i != j)
    return off and all(bool(sp.simplify(hess[i, i]).is_positive) for i in range(len(p)))


def forward_minimizer(vocab: int) -> Derivation:
    """Stationary point of ℓ^F + λ(Σp − 1) on the simplex equals m_k = α p_y + (1-α) p_{k-1}."""
    y, q, p = _symbols("y", vocab), _symbols("q", vocab), _symbols("p", vocab)
    lam = sp.Symbol("lambda", real=True)
    loss = -ALPHA * sum(yi * sp.log(pi) for yi, pi in _zip(y, p)) + (1 - ALPHA) * _kl(q, p)
    lagrangian = loss + lam * (sum(p) - 1)
    equations = [sp.diff(lagrangian, pi) for pi in p] + [sum(p) - 1]
    (solution,) = sp.solve(equations, [*p, lam], dict=True)
    on_simplex = {y[-1]: 1 - sum(y[:-1]), q[-1]: 1 - sum(q[:-1])}
    m = [ALPHA * yi + (1 - ALPHA) * qi for yi, qi in _zip(y, q)]
    gaps = [sp.simplify((solution[pi] - mi).subs(on_simplex)) for pi, mi in _zip(p, m)]
    holds = all(g == 0 for g in gaps) and _convex(loss, p)
    return Derivation(
        f"forward minimizer, V={vocab}",
        "argmin_p ℓ^F(p) = m_k = α·p_y + (1-α)·p_{k-1} (KKT; strictly convex)",
        (
            ("ℓ^F(p)", loss),
            ("stationarity", sp.Tuple(*equations)),
            ("solution p", sp.Tuple(*(solution[pi] for pi in p))),
            ("p − m_k on the simplex", sp.Tuple(*gaps)),
        ),
        holds,
    )


def reverse_minimizer(vocab: int) -> Derivation:
    """Stationary point of ℓ^R + λ(Σp − 1) equals g_k = p_y^α p_{k-1}^{1-α} / Z_k."""
    y, q, p = _symbols("y", vocab), _symbols("q", vocab), _symbols("p", vocab)
    lam, u = sp.Symbol("lambda", real=True), sp.Symbol("u", positive=True)
    loss = ALPHA * _kl(p, y) + (1 - ALPHA) * _kl(p, q)
    lagrangian = loss + lam * (sum(p) - 1)
    # stationarity in p_v, with λ = −1 − log u (u > 0), solved for each p_v
    stationary = [sp.diff(lagrangian, pi).subs(lam, -1 - sp.log(u)) for pi in p]
    p_of_u = [sp.solve(eq, pi)[0] for eq, pi in _zip(stationary, p)]
    (u_star,) = sp.solve(sum(p_of_u) - 1, u)
    z = sum(yi**ALPHA * qi ** (1 - ALPHA) for yi, qi in _zip(y, q))
    g = [yi**ALPHA * qi ** (1 - ALPHA) / z for yi, qi in _zip(y, q)]
    gaps = [sp.simplify(pv.subs(u, u_star) - gv) for pv, gv in _zip(p_of_u, g)]
    holds = all(gap == 0 for gap in gaps) and _convex(loss, p)
    return Derivation(
        f"reverse minimizer, V={vocab}",
        "argmin_p ℓ^R(p) = g_k = p_y^α·p_{k-1}^(1-α)/Z_k (KKT; strictly convex)",
        (
            ("ℓ^R(p)", loss),
            ("p_v(u), u = exp(-1-λ)", sp.Tuple(*p_of_u)),
            ("u from Σp = 1", u_star),
            ("p − g_k", sp.Tuple(*gaps)),
        ),
        holds,
    )


def decompositions(vocab: int = 3) -> list[Derivation]:
    """ℓ^R = KL(p‖g) − log Z, ℓ^F = KL(m‖p) + H(m) − (1-α)H(p_{k-1}), CE = KL + H."""
    y, q, p = _symbols("y", vocab), _symbols("q", vocab), _symbols("p", vocab)
    z = sum(yi**ALPHA * qi ** (1 - ALPHA) for yi, qi in _zip(y, q))
    g = [yi**ALPHA * qi ** (1 - ALPHA) / z for yi, qi in _zip(y, q)]
    m = [ALPHA * yi + (1 - ALPHA) * qi for yi, qi in _zip(y, q)]
    p_simplex = {p[-1]: 1 - sum(p[:-1])}
    reverse = (ALPHA * _kl(p, y) + (1 - ALPHA) * _kl(p, q)) - (_kl(p, g) - sp.log(z))
    ce = -sum(yi * sp.log(pi) for yi, pi in _zip(y, p))
    forward = (ALPHA * ce + (1 - ALPHA) * _kl(q, p)) - (
        _kl(m, p) + _entropy(m) - (1 - ALPHA) * _entropy(q)
    )
    cross = ce - (_kl(y, p) + _entropy(y))
    cases = [
        ("ℓ^R(p) = KL(p ‖ g_k) − log Z_k (p on the simplex)", reverse.subs(p_simplex)),
        ("ℓ^F(p) = KL(m_k ‖ p) + H(m_k) − (1-α)·H(p_{k-1})", forward),
        ("CE(p_y, p) = KL(p_y ‖ p) + H(p_y)", cross),
    ]
    return [
        Derivation(
            f"identity {i + 1}, V={vocab}",
            claim,
            (
                ("lhs − rhs", diff),
                ("simplified", sp.simplify(sp.expand_log(sp.expand(diff), force=True))),
            ),
            _is_zero(diff),
        )
        for i, (claim, diff) in enumerate(cases)
    ]


def _kl_exact(p: Sequence[sp.Expr], q: Sequence[sp.Expr]) -> sp.Expr:
    """KL with the conventions 0·log 0 = 0 and KL = ∞ where q misses mass of p."""
    if any(pi != 0 and qi == 0 for pi, qi in _zip(p, q)):
        return sp.oo
    return sp.nsimplify(sum(pi * sp.log(pi / qi) for pi, qi in _zip(p, q) if pi != 0))


def two_token_check() -> Derivation:
    """p_y = (1,0), p_{k-1} = p = (½,½): KL(p ‖ p_y) = ∞, CE(p_y, p) = log 2."""
    y, q, p = (tuple(sp.Rational(v.numerator, v.denominator) for v in vec) for vec in (toy.P_Y, toy.P_PREV, toy.P))
    kl_p_y = _kl_exact(p, y)
    ce = -sum(yi * sp.log(pi) for yi, pi in _zip(y, p) if yi != 0)
    reverse = ALPHA * kl_p_y + (1 - ALPHA) * _kl_exact(p, q)
    forward = ALPHA * ce + (1 - ALPHA) * _kl_exact(q, p)
    m = sp.Tuple(*(sp.factor(ALPHA * yi + (1 - ALPHA) * qi) for yi, qi in _zip(y, q)))
    weights = [0 if yi == 0 else yi**ALPHA * qi ** (1 - ALPHA) for yi, qi in _zip(y, q)]
    g = sp.Tuple(*(sp.simplify(w / sum(weights)) for w in weights))
    holds = kl_p_y == sp.oo and sp.simplify(ce - sp.log(2)) == 0 and reverse == sp.oo
    return Derivation(
        "two-token check (review)",
        "p_y=(1,0), p_{k-1}=p=(1/2,1/2): KL(p‖p_y) = oo while CE(p_y,p) = log 2",
        (
            ("KL(p ‖ p_y)", kl_p_y),
            ("CE(p_y, p)", ce),
            ("ℓ^R(p)", reverse),
            ("ℓ^F(p)", sp.simplify(forward)),
            ("m_k", m),
            ("g_k (α > 0)", g),
        ),
        bool(holds),
    )


def lemma1_steps(vocab: int = 3) -> list[Derivation]:
    """Entropy step on KL(p‖p_y) is g_k; Euclidean step on ½‖p − p_y‖² is m_k (on the simplex).

    Entropy geometry: the step's unnormalized weights w_v = q_v·exp(−α∇L_v) are c·y_v^α q_v^(1-α)
    with the same c for every v, so after normalization the step is g_k exactly.
    """
    y, q = _symbols("y", vocab), _symbols("q", vocab)
    grad_reverse = [sp.log(qi / yi) + 1 for yi, qi in _zip(y, q)]
    weights = [qi * sp.exp(-ALPHA * gi) for qi, gi in _zip(q, grad_reverse)]
    geometric = [yi**ALPHA * qi ** (1 - ALPHA) for yi, qi in _zip(y, q)]
    log_c = [
        sp.simplify(sp.expand_log(sp.log(w / c), force=True)) for w, c in _zip(weights, geometric)
    ]
    euclid_step = [qi - ALPHA * (qi - yi) for yi, qi in _zip(y, q)]
    m = [ALPHA * yi + (1 - ALPHA) * qi for yi, qi in _zip(y, q)]
    gaps_m = [sp.simplify(s - mv) for s, mv in _zip(euclid_step, m)]
    on_simplex = {y[-1]: 1 - sum(y[:-1]), q[-1]: 1 - sum(q[:-1])}
    mass = sp.simplify(sum(euclid_step).subs(on_simplex))
    same_c = all(c == log_c[0] for c in log_c) and not (log_c[0].free_symbols - {ALPHA})
    return [
        Derivation(
            f"Lemma 1, entropy geometry, V={vocab}",
            "p ∝ p_{k-1}·exp(−α∇KL(p_{k-1}‖p_y)) equals g_k",
            (
                ("∇L(p_{k-1})", sp.Tuple(*grad_reverse)),
                ("weights w_v", sp.Tuple(*weights)),
                ("log(w_v / (y_v^α q_v^(1-α))), the same for every v", sp.Tuple(*log_c)),
            ),
            same_c,
        ),
        Derivation(
            f"Lemma 1, Euclidean geometry, V={vocab}",
            "p_{k-1} − α(p_{k-1} − p_y) equals m_k and has total mass 1 (no projection)",
            (("step − m_k", sp.Tuple(*gaps_m)), ("Σ step", mass)),
            all(gap == 0 for gap in gaps_m) and mass == 1,
        ),
    ]


def mirror_counterexample() -> Derivation:
    """Entropy step on the forward loss CE(p_y, p) is not m_k: p_y=(1,0), p_{k-1}=(½,½), α=½."""
    half = sp.Rational(1, 2)
    y, q, alpha = (sp.Integer(1), sp.Integer(0)), (half, half), half
    grad = [-yi / qi for yi, qi in _zip(y, q)]  # ∇_p CE(p_y, p) at p_{k-1}
    weights = [qi * sp.exp(-alpha * gi) for qi, gi in _zip(q, grad)]
    step = sp.Tuple(*(sp.simplify(w / sum(weights)) for w in weights))
    m = sp.Tuple(*(alpha * yi + (1 - alpha) * qi for yi, qi in _zip(y, q)))
    gap = sp.simplify(step[0] - m[0])
    return Derivation(
        "Lemma 1 fails for the forward loss",
        "p ∝ p_{k-1}·exp(α·p_y/p_{k-1}) ≠ m_k (p_y=(1,0), p_{k-1}=(1/2,1/2), α=1/2)",
        (
            ("∇CE(p_y, ·)(p_{k-1})", sp.Tuple(*grad)),
            ("entropy step", step),
            ("m_k", m),
            ("step_1 − m_1", gap),
            ("numerically", sp.N(gap, 6)),
        ),
        bool(gap.is_zero is False),
    )


def proposition1_slack(vocab: int = 3) -> list[Derivation]:
    """The slack of Proposition 1's implied inequality, forward and reverse, as a sum of two
    non-negative terms (module docstring), exactly, for symbolic readouts on the simplex."""
    t, q, p = _symbols("y", vocab), _symbols("q", vocab), _symbols("p", vocab)
    z = sum(ti**ALPHA * qi ** (1 - ALPHA) for ti, qi in _zip(t, q))
    g = [ti**ALPHA * qi ** (1 - ALPHA) / z for ti, qi in _zip(t, q)]
    m = [ALPHA * ti + (1 - ALPHA) * qi for ti, qi in _zip(t, q)]

    def ce(r: Sequence[sp.Expr]) -> sp.Expr:
        return -sum(ti * sp.log(ri) for ti, ri in _zip(t, r))

    def forward(r: Sequence[sp.Expr]) -> sp.Expr:
        return ALPHA * ce(r) + (1 - ALPHA) * _kl(q, r)

    def reverse(r: Sequence[sp.Expr]) -> sp.Expr:
        return ALPHA * _kl(r, t) + (1 - ALPHA) * _kl(r, q)

    cases = []
    for name, loss, task, best, kl_term in (
        ("forward", forward, ce, m, _kl(q, p)),
        ("reverse", reverse, lambda r: _kl(r, t), g, _kl(p, q)),
    ):
        delta = loss(p) - loss(best)  # δ_k: the gap of p_k to the loss's minimizer
        slack = ALPHA * (task(q) + delta / ALPHA - task(p))
        rhs = (loss(q) - loss(best)) + (1 - ALPHA) * kl_term
        cases.append((name, delta, slack, rhs))
    words = {"forward": "α·(CE(t,q) + δ/α − CE(t,p)) = [ℓ^F(q) − ℓ^F(m_k)] + (1-α)·KL(q ‖ p) ≥ 0",
             "reverse": "α·(KL(q‖t) + δ/α − KL(p‖t)) = [ℓ^R(q) − ℓ^R(g_k)] + (1-α)·KL(p ‖ q) ≥ 0"}
    return [
        Derivation(
            f"Proposition 1 implied, {name}, V={vocab}",
            words[name],
            (("δ_k", delta), ("α · slack", slack), ("gap of p_{k-1} + (1-α)·KL", rhs),
             ("difference", sp.simplify(sp.expand_log(sp.expand(slack - rhs), force=True)))),
            _is_zero(slack - rhs),
        )
        for name, delta, slack, rhs in cases
    ]


def proposition1_transcription() -> Derivation:
    """CE_k ≤ CE_{k-1} + δ_k (task CE, δ_k unscaled) is false: a reverse chunk exactly at its
    optimum g_k (δ_k = 0) after p_{k-1} = (99/100, 1/100), ε = 1/10, α = 1/2, V = 2."""
    half, eps = sp.Rational(1, 2), sp.Rational(1, 10)
    t = (1 - eps + eps / 2, eps / 2)
    q = (sp.Rational(99, 100), sp.Rational(1, 100))
    weights = [ti**half * qi**half for ti, qi in _zip(t, q)]
    g = [w / sum(weights) for w in weights]
    ce_prev, ce_k = -sp.log(q[0]), -sp.log(g[0])
    rise = sp.simplify(ce_k - ce_prev)
    implied = sp.simplify(_kl(g, t) - _kl(q, t))  # ≤ 0 + δ_k/α = 0: the implied form holds
    return Derivation(
        "Proposition 1 as transcribed fails",
        "reverse chunk at g_k (δ_k = 0), p_{k-1}(y) = 0.99 > 1 − ε/2: CE_k − CE_{k-1} > 0 = δ_k "
        "(ε = 0.1, α = 0.5, V = 2), while KL(p_k‖t) ≤ KL(p_{k-1}‖t) + δ_k/α holds",
        (("g_k", sp.Tuple(*g)), ("CE_{k-1}", ce_prev), ("CE_k", ce_k), ("δ_k", sp.Integer(0)),
         ("CE_k − CE_{k-1}", rise), ("numerically", sp.N(rise, 6)),
         ("KL(p_k‖t) − KL(p_{k-1}‖t)", sp.N(implied, 6))),
        bool(sp.N(rise) > 0 and sp.N(implied) <= 0),
    )


@functools.lru_cache(maxsize=1)
def all_derivations() -> tuple[Derivation, ...]:
    """Every derivation of this module, in reading order (computed once, a few seconds)."""
    out: list[Derivation] = []
    for vocab in (2, 3):
        out += [forward_minimizer(vocab), reverse_minimizer(vocab)]
    out += decompositions(3)
    out.append(two_token_check())
    out += lemma1_steps(3)
    out.append(mirror_counterexample())
    out += proposition1_slack(3)
    out.append(proposition1_transcription())
    return tuple(out)
