"""Benchmark (not a test): a hostile referee's attack on the float64 maths of the step-scaling probe.
Report: docs/breaks/scaling_drift.md.

    OMP_NUM_THREADS=1 python3 scripts/break_scaling_drift.py              # ~15 s on one core, prints the tables
    OMP_NUM_THREADS=1 python3 scripts/break_scaling_drift.py --markdown   # the tables as Markdown (the page's)
    OMP_NUM_THREADS=1 python3 scripts/break_scaling_drift.py --only "p_y of shape"

The rules attacked (``probes/scaling.py`` at commit 5afdde4: ``Drift``, ``drift_values``;
``zerolock_theory/theory/stability.py``: ``FirstOrder``, ``shared_totals``, ``first_order_totals``):

* drift = R(p; p̃(c)) − R(p; p̃^t), R(outputs; upstream) = Σ_k mean_n ``chunk_divergence(upstream_k,
  output_k, p_y, α, objective)``. ``Drift``'s short form (sums regrouped, taken when every readout is
  strictly positive) equals the definition to summation order: within relative 1e-9 or absolute 1e-12
  (the tests use 1e-13); a non-finite drift is ``None`` exactly where the definition's difference is not
  finite. ``drift_values`` with the other objective's ``Drift`` beside it gives the same values.
* ``shared_totals`` (and ``FirstOrder.totals``, ``first_order_totals``) equal ``stability_terms``'
  ``phi_total``, ``q_total``, ``ratio_total`` and ``defined`` bit for bit (``torch.equal``, NaN equal
  to NaN), inputs with zeros and infinities included; inputs with a NaN go through
  ``first_order_totals``' fallback.

Truth. The drift: the definition evaluated directly, one point at a time, with ``chunk_divergence``
(``by_definition``, the same as ``_by_definition`` in tests/probes/test_probes_scaling_drift.py), None
where not finite. Beside it, for diagnosis only, the exact drift of the same float64 inputs computed
with mpmath at 50 digits (``exact``; "-" where an input is not finite or the arrays are large). The
first-order totals: ``stability_terms`` called on each after alone.

Outcome. The drift: ``Drift(before, p_y, α, objective).values(points)``, the form it took (short or
long) and whether ``drift_values([other objective's Drift, this one], points)`` gave the same bits.
The totals: ``shared_totals([paper, implemented], afters)`` (as the probe calls it), checked also
against ``FirstOrder.totals`` and ``first_order_totals``.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402

import mpmath  # noqa: E402
import torch  # noqa: E402

from probes.scaling import Drift, drift_values  # noqa: E402
from zerolock_theory.theory.stability import (  # noqa: E402
    FirstOrder,
    chunk_divergence,
    first_order_totals,
    shared_totals,
    stability_terms,
)

torch.set_num_threads(1)
D = torch.float64
OBJECTIVES = ("paper", "implemented")
ALPHAS = (0.0, 1e-12, 0.5, 1.0 - 1e-12, 1.0)
REL, ABS, ABS_STRICT = 1e-9, 1e-12, 1e-13  # the claim: relative 1e-9 or absolute 1e-12 (tests: 1e-13)
EXACT_LIMIT = 40_000  # K·N·V above which the mpmath reference is skipped
TINY = 5e-324  # the smallest subnormal float64
mpmath.mp.dps = 50


# ----------------------------------------------------------------------------- the truths


def by_definition(before: torch.Tensor, after: torch.Tensor, p_y: torch.Tensor, alpha: float,
                  objective: str) -> float | None:
    """R(p(c); p̃(c)) − R(p(c); p̃^t) with ``chunk_divergence``, chunk by chunk; None where not finite
    (tests/probes/test_probes_scaling_drift.py, ``_by_definition``)."""
    def r(upstream: torch.Tensor) -> torch.Tensor:
        return sum(chunk_divergence(upstream[k - 1], after[k], p_y, alpha, objective).mean()
                   for k in range(1, after.shape[0]))

    value = float(r(after) - r(before))
    return value if math.isfinite(value) else None


def _exact_chunk(up: list, out: list, y: list, alpha: float, objective: str):
    """D_k at one position, exactly (mpmath) from the float64 values; +inf where the KL is infinite."""
    inf = mpmath.inf
    w_y, w_u = mpmath.mpf(alpha), 1 - mpmath.mpf(alpha)
    if objective == "paper":
        logs = []
        for u, yy in zip(up, y, strict=True):
            term = mpmath.mpf(0)
            if w_y != 0:
                term += -inf if yy == 0 else w_y * mpmath.log(yy)
            if w_u != 0:
                term += -inf if u == 0 else w_u * mpmath.log(u)
            logs.append(term)
        z = mpmath.fsum(mpmath.exp(t) for t in logs if t != -inf)
        if z == 0:
            return inf if any(p > 0 for p in out) else mpmath.mpf(0)
        log_z = mpmath.log(z)
        total = []
        for p, t in zip(out, logs, strict=True):
            if p > 0:
                if t == -inf:
                    return inf
                total.append(p * (mpmath.log(p) - (t - log_z)))
        return mpmath.fsum(total)
    total = []
    for u, yy, p in zip(up, y, out, strict=True):
        m = w_y * yy + w_u * u
        if m > 0:
            if p == 0:
                return inf
            total.append(m * (mpmath.log(m) - mpmath.log(p)))
    return mpmath.fsum(total)


def exact_drift(before: torch.Tensor, after: torch.Tensor, p_y: torch.Tensor, alpha: float,
                objective: str):
    """The exact drift of the float64 inputs (mpmath, 50 digits): a float, None where it is not finite,
    "-" where an input is not finite or the arrays are too large."""
    if after[1:].numel() > EXACT_LIMIT or not all(bool(torch.isfinite(x).all()) for x in (before, after, p_y)):
        return "-"
    y = p_y.expand(after.shape[1:]).tolist()
    b, a = before.tolist(), after.tolist()

    def r(upstream: list):
        rows = []
        for k in range(1, len(a)):
            per = [_exact_chunk(upstream[k - 1][n], a[k][n], y[n], alpha, objective) for n in range(len(y))]
            if any(v == mpmath.inf for v in per):
                return mpmath.inf
            rows.append(mpmath.fsum(per) / len(per))
        return mpmath.fsum(rows)

    hi, lo = r(a), r(b)
    if hi == mpmath.inf or lo == mpmath.inf:
        return None
    return float(hi - lo)


# ----------------------------------------------------------------------------- building blocks


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def softmax_readouts(g: torch.Generator, shape: tuple[int, int, int], scale: float = 3.0) -> torch.Tensor:
    return torch.softmax(scale * torch.randn(shape, generator=g, dtype=D), -1)


def moved(p: torch.Tensor, c: float, g: torch.Generator) -> torch.Tensor:
    """softmax(log p + c·ξ): a move of relative size c (zeros stay zero)."""
    return torch.softmax(torch.log(p) + c * torch.randn(p.shape, generator=g, dtype=D), -1)


def one_hot(labels: list[int], v: int) -> torch.Tensor:
    return torch.nn.functional.one_hot(torch.tensor(labels), v).to(D)


def smoothed(labels: list[int], v: int, eps: float = 0.1) -> torch.Tensor:
    return (1.0 - eps) * one_hot(labels, v) + eps / v


def alpha_label(alpha: float) -> str:
    return "1-1e-12" if alpha == 1.0 - 1e-12 else f"{alpha:g}"


def fmt(x) -> str:
    if x is None:
        return "None"
    if isinstance(x, str):
        return x
    if isinstance(x, bool):
        return str(x)
    if isinstance(x, torch.Tensor):
        x = float(x)
    if x == 0.0:
        return "-0" if math.copysign(1.0, x) < 0 else "0"
    return f"{x:.15g}"


# ----------------------------------------------------------------------------- drift constructions


@dataclass
class DriftCase:
    name: str
    before: torch.Tensor
    points: list[tuple[str, torch.Tensor]]
    p_y: torch.Tensor
    cases: list[tuple[str, float]]
    domain: str = ""  # "" inside the probe's domain, else why not


def drift_cases() -> list[DriftCase]:
    out: list[DriftCase] = []
    both = [(o, a) for o in OBJECTIVES for a in ALPHAS]
    half = [(o, 0.5) for o in OBJECTIVES]

    g = gen(1)
    b = softmax_readouts(g, (3, 3, 7))
    out.append(DriftCase("moderate softmax K=2 N=3 V=7, p_y smoothed (eps 0.1)", b,
                         [("c=1", softmax_readouts(g, (3, 3, 7))), ("c=1e-8", moved(b, 1e-8, g))],
                         smoothed([0, 3, 6], 7), both))

    g = gen(2)
    b = softmax_readouts(g, (3, 3, 7))
    out.append(DriftCase("p_y one-hot (eps 0)", b,
                         [("c=1", softmax_readouts(g, (3, 3, 7))), ("c=1e-8", moved(b, 1e-8, g))],
                         one_hot([1, 2, 5], 7), [("implemented", a) for a in ALPHAS] + [("paper", 0.0), ("paper", 0.5)]))

    g = gen(3)
    b = torch.softmax(740.0 * torch.rand(3, 2, 50, generator=g, dtype=D), -1)
    pts = [("c=1", torch.softmax(740.0 * torch.rand(3, 2, 50, generator=g, dtype=D), -1)), ("c=1e-8", moved(b, 1e-8, g))]
    out.append(DriftCase("peaked softmax, logits spread 740 (min readout ~1e-322, all > 0), p_y smoothed",
                         b, pts, smoothed([0, 1], 50), half))
    out.append(DriftCase("peaked softmax, logits spread 740, p_y one-hot", b, pts, one_hot([0, 1], 50),
                         [("implemented", 0.5), ("implemented", 1e-12), ("paper", 0.0)]))

    for k in (16, 64):  # many peaked chunks: R ~ 100 nats a chunk, a move of 1e-8
        g = gen(300)
        b = torch.softmax(740.0 * torch.rand(k + 1, 1, 50, generator=g, dtype=D), -1)
        out.append(DriftCase(f"peaked softmax, logits spread 740, K = {k}, N = 1, p_y one-hot", b,
                             [("c=1e-8", moved(b, 1e-8, g))], one_hot([0], 50), [("paper", 0.0), ("implemented", 0.5)]))

    g = gen(4)
    b = torch.softmax(800.0 * torch.rand(3, 2, 50, generator=g, dtype=D), -1)
    out.append(DriftCase("peaked softmax, logits spread 800 (exact zeros), p_y smoothed", b,
                         [("c=1", torch.softmax(800.0 * torch.rand(3, 2, 50, generator=g, dtype=D), -1)),
                          ("c=1e-8", moved(b, 1e-8, g))], smoothed([0, 1], 50), half))

    ones = torch.ones(3, 2, 1, dtype=D)
    out.append(DriftCase("V = 1", ones, [("same", ones.clone())], torch.ones(2, 1, dtype=D),
                         [(o, a) for o in OBJECTIVES for a in (0.0, 0.5, 1.0)]))

    g = gen(5)
    b = softmax_readouts(g, (2, 1, 2))
    pts = [("c=1", softmax_readouts(g, (2, 1, 2))), ("c=1e-8", moved(b, 1e-8, g))]
    ends = [(o, a) for o in OBJECTIVES for a in (1e-12, 1.0 - 1e-12)]
    out.append(DriftCase("V = 2, N = 1, K = 1, p_y one-hot", b, pts, one_hot([1], 2), ends))
    out.append(DriftCase("V = 2, N = 1, K = 1, p_y smoothed", b, pts, smoothed([1], 2), ends))

    g = gen(6)
    b = softmax_readouts(g, (3, 2, 7))
    mixed = torch.stack([one_hot([2], 7)[0], smoothed([4], 7)[0]])
    out.append(DriftCase("p_y one-hot on row 0, smoothed on row 1", b,
                         [("c=1", softmax_readouts(g, (3, 2, 7))), ("c=1e-8", moved(b, 1e-8, g))], mixed, half))

    g = gen(7)
    b = softmax_readouts(g, (3, 2, 7))
    p_y = torch.full((2, 7), 1e-300, dtype=D)
    p_y[:, 3] = 1.0
    p_y[:, 5] = 1e-17
    out.append(DriftCase("p_y max exactly 1.0, a second entry 1e-17, 1e-300 elsewhere", b,
                         [("c=1", softmax_readouts(g, (3, 2, 7))), ("c=1e-8", moved(b, 1e-8, g))], p_y,
                         [("implemented", 0.5), ("implemented", 1e-12), ("paper", 0.5), ("paper", 1e-12)]))

    g = gen(8)
    b = softmax_readouts(g, (3, 3, 7))
    up_moved = b.clone()  # p_0 alone moves: the upstream of chunk 1; every output p_1..p_K stays
    up_moved[0] = softmax_readouts(g, (1, 3, 7))[0]
    out_moved = b.clone()  # p_K alone moves: an output only; every upstream p_0..p_{K-1} stays
    out_moved[-1] = softmax_readouts(g, (1, 3, 7))[0]
    eq = [(o, a) for o in OBJECTIVES for a in (0.0, 0.5)]
    out.append(DriftCase("point equal to before (drift exactly 0)", b, [("p = before", b.clone())], smoothed([0, 1, 2], 7), eq))
    out.append(DriftCase("point equal to before, p_y one-hot (drift exactly 0)", b, [("p = before", b.clone())],
                         one_hot([0, 1, 2], 7), [("implemented", 0.5)]))
    out.append(DriftCase("only p_0 moved (upstream of chunk 1; outputs identical to before's)", b, [("up moved", up_moved)], smoothed([0, 1, 2], 7), eq))
    out.append(DriftCase("only p_K moved (an output; upstream identical to before's: drift exactly 0)", b, [("out moved", out_moved)],
                         smoothed([0, 1, 2], 7), eq))

    g = gen(9)
    logits = 5.0 * torch.randn(3, 3, 7, generator=g)
    b32 = torch.softmax(logits, -1).double()
    p32 = torch.softmax(logits + 1e-3 * torch.randn(3, 3, 7, generator=g), -1).double()
    out.append(DriftCase("float32 softmax converted to float64 (rows sum to 1 +- 1e-7)", b32, [("c=1e-3", p32)],
                         smoothed([0, 1, 2], 7), half + [("implemented", 1e-12)]))

    g = gen(10)
    b = softmax_readouts(g, (3, 3, 7)) * (0.3 + 2.7 * torch.rand(3, 3, 1, generator=g, dtype=D))
    p = softmax_readouts(g, (3, 3, 7)) * (0.3 + 2.7 * torch.rand(3, 3, 1, generator=g, dtype=D))
    out.append(DriftCase("not normalised: rows scaled by 0.3..3", b, [("c=1", p)], smoothed([0, 1, 2], 7), half,
                         "outside: readouts are exp(log-softmax)"))

    g = gen(11)
    b = softmax_readouts(g, (3, 2, 5))
    bad = softmax_readouts(g, (3, 2, 5))
    bad[1, 0, 2] = math.nan
    out.append(DriftCase("NaN in one point only", b, [("fine", softmax_readouts(g, (3, 2, 5))), ("NaN", bad)],
                         smoothed([0, 1], 5), half))
    inf_up, inf_out = softmax_readouts(g, (3, 2, 5)), softmax_readouts(g, (3, 2, 5))
    inf_up[0, 1, 3] = math.inf
    inf_out[2, 0, 1] = math.inf
    out.append(DriftCase("+inf in a point's upstream / in a point's output", b, [("inf upstream", inf_up), ("inf output", inf_out)],
                         smoothed([0, 1], 5), half))

    g = gen(12)
    b = softmax_readouts(g, (3, 2, 6))
    b[..., 4], b[..., 5] = 1e-300, 7 * TINY
    p = moved(b, 1e-8, g)
    p[..., 5] = 9 * TINY
    q = softmax_readouts(g, (3, 2, 6))
    q[..., 4], q[..., 5] = 3e-300, TINY
    out.append(DriftCase("entries 1e-300 and subnormal (k*5e-324) in every row", b, [("c=1", q), ("c=1e-8", p)],
                         smoothed([0, 1], 6), [(o, a) for o in OBJECTIVES for a in (1e-12, 0.5)]))

    g = gen(13)
    b = softmax_readouts(g, (3, 2, 5))
    p = softmax_readouts(g, (3, 2, 5))
    p[0] = 1e-320 * torch.tensor([1.0, 2.0, 3.0, 5.0, 7.0], dtype=D)
    out.append(DriftCase("not normalised: one point's upstream rows entirely subnormal (sum 1.8e-319)", b, [("c=1", p)],
                         smoothed([0, 1], 5), [("paper", a) for a in (0.0, 1e-12, 1e-6, 1e-3, 0.1)] + [("implemented", 1e-3)],
                         "outside: a readout row sums to ~1"))

    g = gen(14)
    b = softmax_readouts(g, (3, 2, 5))
    p = softmax_readouts(g, (3, 2, 5))
    p[1:] *= 1e306
    out.append(DriftCase("not normalised: a point's outputs scaled to ~1e306", b, [("c=1", p)], smoothed([0, 1], 5), half,
                         "outside: readouts are <= 1"))

    g = gen(15)
    b = softmax_readouts(g, (3, 3, 6))
    pts = [("c=1", softmax_readouts(g, (3, 3, 6))), ("c=1e-8", moved(b, 1e-8, g))]
    out.append(DriftCase("p_y of shape [1, V] one-hot (one target broadcast over N = 3)", b, pts, one_hot([2], 6),
                         [("implemented", 0.0), ("implemented", 0.5), ("paper", 0.0)],
                         "contract: the probe passes [N, V]; chunk_divergence broadcasts"))
    out.append(DriftCase("p_y of shape [1, V] smoothed (broadcast over N = 3)", b, pts, smoothed([2], 6), half,
                         "contract: the probe passes [N, V]; chunk_divergence broadcasts"))
    out.append(DriftCase("p_y of shape [V] one-hot", b, pts[:1], one_hot([2], 6)[0], [("implemented", 0.5), ("paper", 0.0)],
                         "contract: the probe passes [N, V]; chunk_divergence broadcasts"))

    # large R: 16 chunks, outputs with half their mass on the coordinate whose upstream readout is e^-740
    g = gen(16)
    k = 16
    row = torch.tensor([1.0, math.exp(-740.0), 0.3, 0.2], dtype=D)
    b = (row / row.sum()).repeat(k + 1, 2, 1)
    b[1:] = torch.tensor([0.25, 0.5, 0.125, 0.125], dtype=D)
    p = b.clone()
    p[:-1] = moved(b[:-1], 1e-8, g)
    out.append(DriftCase("large R (K = 16, ~370 nats a chunk), c = 1e-8", b, [("c=1e-8", p)], torch.full((2, 4), 0.25, dtype=D),
                         [(o, a) for o in OBJECTIVES for a in (0.0, 0.5)]))

    # the test's peaked readouts, larger: V = 3000, moves 1e-4 and 1e-8
    g = gen(17)
    logits = 4.0 * torch.randn(3, 4, 3000, generator=g, dtype=D)
    b = torch.softmax(logits, -1)
    pts = [(f"c={c:g}", torch.softmax(logits + c * torch.randn(logits.shape, generator=g, dtype=D), -1)) for c in (1e-4, 1e-8)]
    labels = torch.randint(0, 3000, (4,), generator=g).tolist()
    out.append(DriftCase("V = 3000, N = 4, logits 4*randn, p_y one-hot", b, pts, one_hot(labels, 3000),
                         [("implemented", 0.5), ("implemented", 1e-12), ("implemented", 1.0 - 1e-12)]))
    out.append(DriftCase("V = 3000, N = 4, logits 4*randn, p_y smoothed", b, pts, smoothed(labels, 3000),
                         [("paper", 0.5), ("paper", 1e-12), ("implemented", 1.0 - 1e-12)]))

    g = gen(19)
    b = softmax_readouts(g, (3, 2, 5))
    b[1, 1, 1] = math.nan
    out.append(DriftCase("NaN in before", b, [("c=1", softmax_readouts(g, (3, 2, 5)))], smoothed([0, 1], 5), half))

    g = gen(18)
    b = softmax_readouts(g, (3, 2, 5))
    z = softmax_readouts(g, (3, 2, 5))
    z[0, 1, 2] = 0.0
    z[2, 0, 4] = 0.0
    out.append(DriftCase("point with exact zeros (upstream and output), before positive", b, [("zeros", z)],
                         one_hot([0, 4], 5), [(o, a) for o in OBJECTIVES for a in (0.0, 0.5, 1.0)]))
    return out


@dataclass
class Row:
    section: str
    construction: str
    truth: str
    outcome: str
    agree: str
    exact: str = ""
    note: str = ""
    broken: bool = False
    domain: str = ""


def _form(drift: Drift, p: torch.Tensor) -> str:
    if not (drift.short and bool(p.amin() > 0)):
        return "long"
    return "short" if bool(torch.isfinite(drift._short(p, torch.log(p)))) else "long (short not finite)"


def drift_rows(only: str | None) -> list[Row]:
    rows: list[Row] = []
    for case in drift_cases():
        if only and only not in case.name:
            continue
        for objective, alpha in case.cases:
            other = "paper" if objective == "implemented" else "implemented"
            points = [p for _, p in case.points]
            try:
                drift = Drift(case.before, case.p_y, alpha, objective)
                single = drift.values(points)
                forms = [_form(drift, p) for p in points]
                error = None
            except Exception as exc:  # a crash is an outcome
                drift = single = forms = None
                error = f"{type(exc).__name__}: {str(exc)[:70]}"
            try:
                paired = drift_values([Drift(case.before, case.p_y, alpha, other), drift], points)[1] if drift else "-"
            except Exception as exc:  # the other objective's Drift: its own rows record it
                paired = f"{type(exc).__name__}"
            for i, (label, p) in enumerate(case.points):
                truth = by_definition(case.before, p, case.p_y, alpha, objective)
                exact = exact_drift(case.before, p, case.p_y, alpha, objective)
                name = f"{case.name}; {objective}, alpha={alpha_label(alpha)}, {label}"
                if error is not None:
                    rows.append(Row("drift", name, fmt(truth), f"crash ({error})", "NO", fmt(exact), broken=True, domain=case.domain))
                    continue
                value, form = single[i], forms[i]
                if isinstance(paired, str):
                    same_pair, note = True, f"paired call crashed in the {other} Drift ({paired})"
                else:
                    same_pair = (value is None and paired[i] is None) or (value is not None and paired[i] is not None
                                                                           and value == paired[i])
                    note = "" if same_pair else f"paired call gave {fmt(paired[i])}"
                if truth is None or value is None:
                    ok = truth is None and value is None
                    outcome = f"{fmt(value)} ({form})"
                else:
                    err = abs(value - truth)
                    rel = err / abs(truth) if truth != 0 else math.inf if err else 0.0
                    ok = err <= max(REL * abs(truth), ABS)
                    outcome = f"{fmt(value)} ({form}; abs {err:.1e}, rel {rel:.1e})"
                    if ok and err > max(REL * abs(truth), ABS_STRICT):
                        note = (note + "; " if note else "") + "beyond the tests' 1e-13"
                    if truth == 0.0:
                        note = (note + "; " if note else "") + ("exactly 0" if value == 0.0 else "not exactly 0")
                    if not ok and isinstance(exact, float):
                        d_out, d_def = abs(value - exact), abs(truth - exact)
                        note = (note + "; " if note else "") + f"vs exact: outcome {d_out:.1e}, definition {d_def:.1e}"
                ok = ok and same_pair
                rows.append(Row("drift", name, fmt(truth), outcome, "yes" if ok else "NO", fmt(exact), note,
                                broken=not ok, domain=case.domain))
    if not only or only in "no points":
        b = softmax_readouts(gen(20), (3, 2, 5))
        try:
            outcome = str(drift_values([Drift(b, smoothed([0, 1], 5), 0.5, "paper")], []))
        except Exception as exc:
            outcome = f"crash ({type(exc).__name__}: {str(exc)[:50]})"
        rows.append(Row("drift", "no points: drift_values([Drift(...)], [])", "[[]]", outcome,
                        "yes" if outcome == "[[]]" else "NO", "-", broken=outcome != "[[]]",
                        domain="contract: the probe has >= 2 factors"))
    return rows


# ----------------------------------------------------------------------------- first-order constructions


@dataclass
class TotalsCase:
    name: str
    p_t: torch.Tensor  # [K+1, N, V] readouts at ω^t: [:-1] upstream, [1:] outputs
    afters: list[tuple[str, torch.Tensor]]  # [K, N, V] upstream at the scaled points
    p_y: torch.Tensor
    cases: list[tuple[str, float]]
    domain: str = ""
    nan: bool = field(default=False)


def totals_cases() -> list[TotalsCase]:
    out: list[TotalsCase] = []
    g = gen(101)
    b = softmax_readouts(g, (3, 3, 7))
    afters = [("c=1", softmax_readouts(g, (2, 3, 7))), ("c=1e-8", moved(b[:-1], 1e-8, g)), ("after = before", b[:-1].clone())]
    out.append(TotalsCase("moderate softmax K=2 N=3 V=7, p_y smoothed", b, afters, smoothed([0, 3, 6], 7),
                          [(o, a) for o in OBJECTIVES for a in ALPHAS]))
    out.append(TotalsCase("moderate softmax, p_y one-hot", b, afters[:2], one_hot([0, 3, 6], 7),
                          [(o, a) for o in OBJECTIVES for a in (0.0, 0.5, 1.0)]))

    g = gen(102)

    def draw(zeros: float) -> torch.Tensor:
        x = torch.rand(3, 2, 5, generator=g, dtype=D)
        x = torch.where(torch.rand(x.shape, generator=g, dtype=D) < zeros, torch.zeros_like(x), x)
        x[..., 0] += 1e-3
        return x / x.sum(-1, keepdim=True)

    zs = draw(0.1)
    out.append(TotalsCase("exact zeros in readouts, outputs and afters (10%), p_y smoothed", zs,
                          [(f"draw {i}", draw(0.1)[:-1]) for i in range(3)] + [("after = before", zs[:-1].clone())],
                          smoothed([0, 4], 5), [(o, a) for o in OBJECTIVES for a in (0.0, 0.5, 1.0)]))
    support = torch.ones(1, 2, 5, dtype=D)
    support[0, 0, 3] = support[0, 1, 1] = 0.0  # one zero coordinate per position, the same in every readout

    def on_support(x: torch.Tensor) -> torch.Tensor:
        x = x * support
        return x / x.sum(-1, keepdim=True)

    zb = on_support(softmax_readouts(g, (3, 2, 5)))
    new_zero = on_support(softmax_readouts(g, (2, 2, 5)))
    new_zero[1, 0, 0] = 0.0
    out.append(TotalsCase("a shared zero support (same zero coordinate in every readout, p_y 0 there)", zb,
                          [("c=1", on_support(softmax_readouts(g, (2, 2, 5)))), ("c=1e-8", moved(zb[:-1], 1e-8, g)),
                           ("a new zero", new_zero)], one_hot([0, 4], 5),
                          [(o, a) for o in OBJECTIVES for a in (0.0, 0.5, 1.0)]))
    zb = draw(0.3)
    out.append(TotalsCase("exact zeros in readouts, outputs and afters (30%)", zb,
                          [(f"draw {i}", draw(0.3)[:-1]) for i in range(3)], one_hot([0, 4], 5),
                          [(o, a) for o in OBJECTIVES for a in (0.0, 0.5, 1.0)]))

    g = gen(103)
    b = softmax_readouts(g, (3, 2, 5))
    inf_after = softmax_readouts(g, (2, 2, 5))
    inf_after[0, 0, 1] = math.inf
    out.append(TotalsCase("+inf in one coordinate of an after", b, [("inf after", inf_after)], smoothed([0, 1], 5),
                          [(o, a) for o in OBJECTIVES for a in (0.0, 0.5)], "outside the readouts (<= 1), inside the claim"))
    inf_b = b.clone()
    inf_b[0, 1, 2] = math.inf
    out.append(TotalsCase("+inf in the upstream at omega^t", inf_b, [("c=1", softmax_readouts(g, (2, 2, 5)))],
                          smoothed([0, 1], 5), [(o, 0.5) for o in OBJECTIVES]))
    inf_o = b.clone()
    inf_o[2, 0, 3] = math.inf
    out.append(TotalsCase("+inf in an output at omega^t", inf_o, [("c=1", softmax_readouts(g, (2, 2, 5)))],
                          smoothed([0, 1], 5), [(o, 0.5) for o in OBJECTIVES]))

    # implemented: m = α p_y + (1−α) p̃ rounds to 0 where p̃ > 0 (a subnormal readout times 1−α)
    g = gen(104)
    b = softmax_readouts(g, (3, 2, 5))
    b[0, 0, 4] = TINY  # upstream readout of chunk 1: the smallest subnormal
    b[1, 0, 4] = 0.0  # chunk 1's output at ω^t: exactly 0 there
    b[1, 0] /= b[1, 0].sum()
    after = moved(b[:-1], 1e-3, g)
    after[0, 0, 4] = TINY  # unchanged there
    out.append(TotalsCase("implemented: (1-alpha)*5e-324 rounds to 0 where the output is 0 (p_y one-hot elsewhere)",
                          b, [("c=1e-3", after), ("after = before", b[:-1].clone())], one_hot([0, 1], 5),
                          [("implemented", 0.5), ("implemented", 0.75), ("paper", 0.5)]))

    # implemented: α p_y rounds to 0 where p_y > 0 (a p_y entry below rounding, α = 1e-12)
    g = gen(105)
    b = softmax_readouts(g, (3, 2, 5))
    b[0, 0, 4] = 0.0
    b[0, 0] /= b[0, 0].sum()
    b[1, 0, 4] = 0.0
    b[1, 0] /= b[1, 0].sum()
    p_y = one_hot([0, 1], 5)
    p_y[0, 4] = 1e-320  # max exactly 1.0, a second entry below rounding
    after = moved(b[:-1], 1e-3, g)  # zeros stay zero
    out.append(TotalsCase("implemented: p_y = e_y + 1e-320 at v, alpha*1e-320 rounds to 0, upstream and output 0 at v",
                          b, [("c=1e-3", after), ("after = before", b[:-1].clone())], p_y,
                          [("implemented", 1e-12), ("implemented", 0.5), ("paper", 1e-12)],
                          "outside: the probe's p_y is label_smooth's"))

    g = gen(106)
    b = softmax_readouts(g, (3, 2, 5))
    huge = softmax_readouts(g, (2, 2, 5))
    huge[0, 0, 2] = 1e308
    out.append(TotalsCase("not normalised: an after with one entry 1e308", b, [("huge after", huge)], smoothed([0, 1], 5),
                          [(o, 0.5) for o in OBJECTIVES], "outside: readouts are <= 1"))

    g = gen(107)
    b = softmax_readouts(g, (3, 2, 5))
    nan_after = softmax_readouts(g, (2, 2, 5))
    nan_after[1, 1, 1] = math.nan
    out.append(TotalsCase("NaN in one after only (first_order_totals' fallback)", b,
                          [("fine", softmax_readouts(g, (2, 2, 5))), ("NaN", nan_after)], smoothed([0, 1], 5),
                          [(o, 0.5) for o in OBJECTIVES], nan=True))

    g = gen(108)
    b = torch.softmax(740.0 * torch.rand(3, 2, 50, generator=g, dtype=D), -1)
    out.append(TotalsCase("peaked softmax, logits spread 740 (subnormal readouts)", b,
                          [("c=1", torch.softmax(740.0 * torch.rand(2, 2, 50, generator=g, dtype=D), -1)),
                           ("c=1e-8", moved(b[:-1], 1e-8, g))], smoothed([0, 1], 50),
                          [(o, a) for o in OBJECTIVES for a in (1e-12, 0.5)]))
    b = torch.softmax(800.0 * torch.rand(3, 2, 50, generator=g, dtype=D), -1)
    out.append(TotalsCase("peaked softmax, logits spread 800 (exact zeros)", b,
                          [("c=1", torch.softmax(800.0 * torch.rand(2, 2, 50, generator=g, dtype=D), -1)),
                           ("c=1e-8", moved(b[:-1], 1e-8, g))], one_hot([0, 1], 50),
                          [(o, a) for o in OBJECTIVES for a in (0.0, 0.5)]))

    ones = torch.ones(3, 2, 1, dtype=D)
    out.append(TotalsCase("V = 1", ones, [("same", ones[:-1].clone())], torch.ones(2, 1, dtype=D),
                          [(o, 0.5) for o in OBJECTIVES]))
    g = gen(109)
    b = softmax_readouts(g, (2, 1, 2))
    out.append(TotalsCase("V = 2, N = 1, K = 1", b, [("c=1", softmax_readouts(g, (1, 1, 2))), ("c=1e-8", moved(b[:-1], 1e-8, g))],
                          one_hot([1], 2), [(o, a) for o in OBJECTIVES for a in (1e-12, 1.0 - 1e-12)]))

    g = gen(110)
    logits = 5.0 * torch.randn(3, 3, 7, generator=g)
    b32 = torch.softmax(logits, -1).double()
    a32 = torch.softmax(logits[:-1] + 1e-3 * torch.randn(2, 3, 7, generator=g), -1).double()
    out.append(TotalsCase("float32 softmax converted to float64", b32, [("c=1e-3", a32)], smoothed([0, 1, 2], 7),
                          [(o, 0.5) for o in OBJECTIVES]))

    g = gen(111)
    b = softmax_readouts(g, (3, 3, 6))
    out.append(TotalsCase("p_y of shape [1, V] one-hot", b, [("c=1", softmax_readouts(g, (2, 3, 6)))], one_hot([2], 6),
                          [(o, a) for o in OBJECTIVES for a in (0.0, 0.5)]))
    out.append(TotalsCase("p_y of shape [V] one-hot", b, [("c=1", softmax_readouts(g, (2, 3, 6)))], one_hot([2], 6)[0],
                          [(o, 0.5) for o in OBJECTIVES]))
    mixed = torch.stack([one_hot([2], 6)[0], smoothed([4], 6)[0], smoothed([1], 6)[0]])
    out.append(TotalsCase("p_y one-hot on row 0, smoothed on rows 1-2", b, [("c=1", softmax_readouts(g, (2, 3, 6)))], mixed,
                          [(o, 0.5) for o in OBJECTIVES]))
    return out


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return bool(torch.isnan(a) and torch.isnan(b)) or torch.equal(a, b)


def _bits(a: torch.Tensor) -> int:
    return int(a.reshape(1).view(torch.int64))


def _tuple(t) -> str:
    return f"({fmt(t.phi_total)}, {fmt(t.q_total)}, {fmt(t.ratio_total)}, {t.defined})"


def totals_rows(only: str | None) -> list[Row]:
    rows: list[Row] = []
    for case in totals_cases():
        if only and only not in case.name:
            continue
        up, outp = case.p_t[:-1], case.p_t[1:]
        afters = [a for _, a in case.afters]
        alphas = sorted({a for _, a in case.cases})
        for alpha in alphas:
            wanted = [o for o, a in case.cases if a == alpha]
            try:
                if case.nan:
                    shared = {o: first_order_totals(up, afters, outp, case.p_y, alpha, o) for o in OBJECTIVES}
                    alone = shared
                else:
                    orders = [FirstOrder(up, outp, case.p_y, alpha, o) for o in OBJECTIVES]
                    shared = dict(zip(OBJECTIVES, shared_totals(orders, afters), strict=True))
                    alone = {o: order.totals(afters) for o, order in zip(OBJECTIVES, orders, strict=True)}
                via = {o: first_order_totals(up, afters, outp, case.p_y, alpha, o) for o in OBJECTIVES}
                error = None
            except Exception as exc:
                error = f"{type(exc).__name__}: {str(exc)[:70]}"
            for objective in wanted:
                for i, (label, after) in enumerate(case.afters):
                    name = f"{case.name}; {objective}, alpha={alpha_label(alpha)}, {label}"
                    terms = stability_terms(up, after, outp, case.p_y, alpha, objective)
                    truth = _tuple(terms)
                    if error is not None:
                        rows.append(Row("totals", name, truth, f"crash ({error})", "NO", broken=True, domain=case.domain))
                        continue
                    got = shared[objective][i]
                    fields = ("phi_total", "q_total", "ratio_total")
                    diff = [f for f in fields if not _same(getattr(got, f), getattr(terms, f))]
                    if got.defined != terms.defined:
                        diff.append("defined")
                    others = [name_ for name_, res in (("FirstOrder.totals", alone), ("first_order_totals", via))
                              if any(not _same(getattr(res[objective][i], f), getattr(got, f)) for f in fields)
                              or res[objective][i].defined != got.defined]
                    note = "; ".join(f"{o} differs from shared_totals" for o in others)
                    signs = [f for f in fields if f not in diff and not torch.isnan(getattr(got, f))
                             and _bits(getattr(got, f)) != _bits(getattr(terms, f))]
                    if signs:
                        note = (note + "; " if note else "") + f"torch.equal but bits differ in {signs}"
                    if diff:
                        outcome = f"{_tuple(got)}: {', '.join(diff)} differ"
                        if terms.reason:
                            note = (note + "; " if note else "") + f"stability_terms: {terms.reason.split(':')[0]}"
                    else:
                        outcome = "same bits" if not signs else "torch.equal"
                    ok = not diff and not others
                    rows.append(Row("totals", name, truth, outcome, "yes" if ok else "NO", note=note, broken=not ok,
                                    domain=case.domain))
    return rows


# ----------------------------------------------------------------------------- report


def _cell(s: str) -> str:
    return s.replace("|", "\\|")


def markdown(rows: list[Row]) -> str:
    lines = []
    drift = [r for r in rows if r.section == "drift"]
    totals = [r for r in rows if r.section == "totals"]
    if drift:
        lines += ["| construction | truth (definition) | outcome | agrees? | exact (mpmath) | note |", "|---|---|---|---|---|---|"]
        for r in drift:
            note = "; ".join(x for x in (r.domain, r.note) if x)
            lines.append(f"| {_cell(r.construction)} | {r.truth} | {_cell(r.outcome)} | {r.agree} | {r.exact} | {_cell(note)} |")
        lines.append("")
    if totals:
        lines += ["| construction | truth: stability_terms (phi, q, ratio, defined) | outcome: shared_totals | agrees? | note |",
                  "|---|---|---|---|---|"]
        for r in totals:
            note = "; ".join(x for x in (r.domain, r.note) if x)
            lines.append(f"| {_cell(r.construction)} | {r.truth} | {_cell(r.outcome)} | {r.agree} | {_cell(note)} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    parser.add_argument("--only", default=None, help="only constructions whose name contains this")
    args = parser.parse_args()
    start = time.perf_counter()
    rows = drift_rows(args.only) + totals_rows(args.only)
    if args.markdown:
        print(markdown(rows))
    else:
        for r in rows:
            print(f"[{r.agree:>3}] {r.section}: {r.construction}\n      truth {r.truth}\n      outcome {r.outcome}"
                  + (f"\n      exact {r.exact}" if r.exact else "") + (f"\n      {r.domain}" if r.domain else "")
                  + (f"\n      {r.note}" if r.note else ""))
    broken = [r for r in rows if r.broken]
    print(f"\n{len(rows)} rows, {len(broken)} break ({sum(1 for r in broken if not r.domain)} inside the probe's domain); "
          f"{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
