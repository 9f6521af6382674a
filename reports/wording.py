"""The sentences of the verdict table, written from each row's evidence (``analyses.verdict``).

``figure(verdict)`` is the "measured" cell (the headline figure with its interval, seeds and
horizon) and ``reason(verdict)`` the "reason" cell (why the rule gave that verdict, the runs
excluded as diverged). The report page and the CLI print these; ``analyses.claims`` decides
the verdicts and writes no sentence; ``reports.findings`` states the groups and bound tests
in it. ``fmt`` is the number format of every report section.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from analyses.results import Interval
from analyses.verdict import BoundFigures, Evidence, Verdict
from reports.findings import bound_headline, bound_reason, group_statement

__all__ = ["drift_line", "figure", "fmt", "reason"]


def fmt(value: float) -> str:
    """Three significant digits; ``inf``/``n/a`` for non-finite values."""
    if math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.3g}"


def drift_line(runs: int, d_exponent: Interval | None, q_exponent: Interval | None) -> str:
    """One line: the growth of D_T and of Σ q_t over seeds (or why there is no interval)."""
    if d_exponent is None:
        return f"drift: {runs} run(s), 3 seeds needed for intervals"
    q = "n/a" if q_exponent is None else str(q_exponent)
    return f"drift: D_T ~ T^{d_exponent}, sum q_t ~ T^{q}"


def _bound(ev: Evidence) -> BoundFigures:
    assert ev.bound is not None, f"a {ev.reason!r} row carries its bound test"
    return ev.bound


def _bound_detail(bound: BoundFigures) -> str:
    beta = f"beta = {bound.beta} (descriptive)" if bound.beta is not None else "beta not estimable"
    return f"{bound.label}: {bound_reason(bound)}; {beta}"


def _toy(ev: Evidence) -> str:
    toy = ev.toy
    assert toy is not None, "a toy row carries the toy's figures"
    return (
        f"two-token toy (alpha={fmt(toy.alpha)}, eps={fmt(toy.epsilon)}): KL(p||p_y) = "
        f"{fmt(toy.kl_p_py)}, CE(p_y, p) = {fmt(toy.ce_py_p)}; m_k = "
        f"({', '.join(map(fmt, toy.m))}), g_k = ({', '.join(map(fmt, toy.g))}), "
        f"TV(m_k, g_k) = {fmt(toy.tv_m_g)}"
    )


def _context(ev: Evidence) -> list[str]:
    """The drift check and ρ_t along training, beside an Assumption 5 figure."""
    out = []
    if ev.drift is not None:
        out.append(drift_line(ev.drift.runs, ev.drift.d_exponent, ev.drift.q_exponent))
    if ev.rho is not None:
        out.append(f"along training: median rho {fmt(ev.rho.median)}, max {fmt(ev.rho.max)} "
                   f"over {ev.rho.steps} steps")
    return out


def _descriptive(ev: Evidence) -> str:
    return "; ".join([f"descriptive, {g.group}: {group_statement(g)}" for g in ev.groups] + _context(ev))


def _primary(ev: Evidence) -> str:
    first = ev.groups[0]
    return f"{group_statement(first)} ({first.seeds} seed(s), {first.group})"


def _tracked(ev: Evidence) -> str:
    return "; ".join(f"{group_statement(g)} ({g.seeds} run(s))" for g in ev.groups)


def _proposition_figure(ev: Evidence) -> str:
    others = [f"{g.group}: {g.outcome}" for g in ev.groups[1:]]
    return _primary(ev) + ("; other groups (descriptive): " + "; ".join(others) if others else "")


FIGURE_TEXT: dict[str, Callable[[Evidence], str]] = {
    "skipped": lambda ev: "-",
    "toy_differ": _toy,
    "toy_agree": _toy,
    "no_forward_runs": _tracked,
    "tracking": _tracked,
    "no_scaling_data": lambda ev: "; ".join(_context(ev)) or "-",
    "no_scaling_group": _descriptive,
    "scaling": lambda ev: "; ".join([_primary(ev), *_context(ev)]),
    "no_theorem_schedule": lambda ev: "-",
    "bound": lambda ev: bound_headline(_bound(ev)),
    "uncalibrated": lambda ev: bound_headline(_bound(ev)),
    "no_proposition_group": _descriptive,
    "proposition": _proposition_figure,
}

SCALING_REASONS = {
    "first order": "rho(c) grows like 1/c as the step is scaled down (slope interval < -0.5) on a share of "
    "steps whose interval is > 0; eta_t -> 0 makes sup_t rho_t infinite",
    "bounded": "the slope interval of log rho(c) on log c lies above -0.5, or phi' <= 0 at every scaled step",
    "inconclusive": "the slope or share interval does not decide between bounded and first order",
    "not testable": "fewer than 3 seeds with scaled steps in the primary group",
}
PROPOSITION_REASONS = {
    "consistent": "CE_k <= CE_(k-1) + delta_k at every probed step and pair, at float tolerance",
    "consistent but vacuous": "the inequality holds, but delta_k is over 10x the CE differences it should bound",
    "violated": "the share of violating pairs has a seed interval above 0",
    "isolated violations": "some pairs violate it, but not consistently across seeds",
    "not testable": "fewer than 3 seeds in the primary group",
}


def _uncalibrated(ev: Evidence) -> str:
    return (f"{' and '.join(ev.uncalibrated)} not consistent: the rule rejects a bound that holds; "
            + _bound_detail(_bound(ev)))


REASON_TEXT: dict[str, Callable[[Evidence], str]] = {
    "skipped": lambda ev: ev.skipped or "no data",
    "toy_differ": lambda ev: "the implemented (forward) loss is minimized by m_k = alpha p_y + (1-alpha) "
    "p_(k-1) (closed form), which differs from Lemma 2's g_k in the exact toy",
    "toy_agree": lambda ev: "m_k = g_k in every toy row",
    "no_forward_runs": lambda ev: "no forward-trained (implemented-loss) runs",
    "tracking": lambda ev: "descriptive: which target the implemented loss's chunks move toward, in one "
    "symmetric bounded metric (TV) with the same eps for both targets; the interval is over seeds",
    "no_scaling_data": lambda ev: f"no step-scaling data: {ev.skipped or 'no data'}",
    "no_scaling_group": lambda ev: f"no non-diverged {ev.preregistered}-trained runs with scaled steps "
    "(the pre-registered group)",
    "scaling": lambda ev: SCALING_REASONS[ev.groups[0].outcome],
    "no_theorem_schedule": lambda ev: "no group trained with the theorem's step size eta_t ~ 1/sqrt(t) "
    "(SGD, optim.schedule = inv_sqrt)",
    "bound": lambda ev: _bound_detail(_bound(ev)),
    "uncalibrated": _uncalibrated,
    "no_proposition_group": lambda ev: f"no non-diverged {ev.preregistered}-trained runs with CE_k and delta_k "
    "(the pre-registered group)",
    "proposition": lambda ev: PROPOSITION_REASONS[ev.groups[0].outcome],
}


def figure(verdict: Verdict) -> str:
    """The "measured" cell: the figure behind the verdict; ZeroLock's and backprop's side by side
    when the row compares them."""
    ev = verdict.evidence
    text = FIGURE_TEXT[ev.reason](ev)
    if ev.backprop is not None:
        text = f"ZeroLock {text}; backprop {bound_headline(ev.backprop)}"
    return text


def reason(verdict: Verdict) -> str:
    """The "reason" cell: the rule that applied, then the runs excluded as diverged."""
    ev = verdict.evidence
    text = REASON_TEXT[ev.reason](ev)
    if ev.backprop is not None:
        text = f"not covered by Theorem 1; {text}; backprop: {ev.backprop.verdict}"
    if ev.excluded:
        text += f"; excluded as diverged: {', '.join(ev.excluded)}"
    return text
