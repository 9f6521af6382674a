"""Proposition 1 with its slack on synthetic probe records with known margins."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from analyses.claims.text import group_statement
from analyses.proposition import proposition_group, proposition_run, proposition_verdict
from analyses.results import Interval, NotMeasured


def _frame(
    seed: int, *, d_ce: float, gap: float, steps: int = 20, k0: bool = True, violate_at=(), noise: float = 1e-4
) -> pd.DataFrame:
    """CE_k = 4 + k·d_ce (+ noise), δ_k = gap; at ``violate_at`` steps CE_2 exceeds CE_1 + δ_2 by 0.01."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(steps):
        ce = [4.0 + k * d_ce + noise * rng.normal() for k in range(4)]
        rec = {"step": t}
        for k in range(0 if k0 else 1, 4):
            rec[f"probe/minimizer/{k}/ce"] = ce[k]
        for k in range(1, 4):
            rec[f"probe/minimizer/{k}/gap"] = gap
        if t in violate_at:
            rec["probe/minimizer/2/ce"] = ce[1] + gap + 0.01
        rows.append(rec)
    return pd.DataFrame(rows)


def _group(**kw):
    seeds = kw.pop("seeds", (0, 1, 2))
    return proposition_group([(f"s{s}", _frame(s, **kw)) for s in seeds])


def test_consistent_when_ce_falls_with_depth():
    group = _group(d_ce=-0.2, gap=0.05)
    assert group.verdict == "consistent" and group.runs[0].chunks == [1, 2, 3]
    assert group.runs[0].n_pairs == 60 and group.min_margin.estimate == pytest.approx(0.25, abs=1e-3)


def test_large_slack_is_consistent_but_vacuous_with_its_ratio():
    group = _group(d_ce=0.1, gap=3.0)  # CE rises by 0.1 per chunk, δ = 3 nats
    assert group.verdict == "consistent but vacuous"
    assert group.slack_ratio.estimate == pytest.approx(30.0, rel=0.01)
    assert "consistent but vacuous" in group_statement(group.figures())
    assert "delta_k/|CE_k - CE_k-1| = 30" in group_statement(group.figures())


def test_violations_in_every_seed_and_isolated_ones():
    assert _group(d_ce=0.3, gap=0.1).verdict == "violated"
    isolated = proposition_group([("a", _frame(0, d_ce=-0.2, gap=0.05, violate_at=(3,))),
                                  ("b", _frame(1, d_ce=-0.2, gap=0.05)), ("c", _frame(2, d_ce=-0.2, gap=0.05))])
    assert isolated.verdict == "isolated violations" and isolated.runs[0].n_violations == 1


def test_float_tolerance_not_exact_equality():
    frame = _frame(0, d_ce=0.0, gap=0.0, steps=3, noise=0.0)
    frame["probe/minimizer/2/ce"] = frame["probe/minimizer/1/ce"] + 1e-9  # a rounding-sized rise
    assert proposition_run(frame).n_violations == 0
    frame["probe/minimizer/2/ce"] = frame["probe/minimizer/1/ce"] + 1e-3
    assert proposition_run(frame).n_violations == 3  # pair (1, 2) at each of 3 steps


def test_without_ce0_pairs_start_at_chunk_two_and_few_seeds_are_not_testable():
    assert proposition_run(_frame(0, d_ce=-0.1, gap=0.0, k0=False)).chunks == [2, 3]
    assert _group(d_ce=-0.2, gap=0.05, seeds=(0, 1)).verdict == "not testable"
    with pytest.raises(NotMeasured, match="minimizers"):
        proposition_run(pd.DataFrame({"step": [0]}))


def _interval(v):
    return None if v is None else Interval(*v)


@pytest.mark.parametrize(
    ("share", "n", "slack", "verdict"),
    [(None, 0, None, "not testable"), ((0.2, 0.1, 0.3), 5, None, "violated"),
     ((0.1, -0.1, 0.3), 1, None, "isolated violations"), ((0, 0, 0), 0, (30, 20, 40), "consistent but vacuous"),
     ((0, 0, 0), 0, (3, 1, 5), "consistent")],
)
def test_every_verdict_is_reachable(share, n, slack, verdict):
    assert proposition_verdict(_interval(share), n, _interval(slack)) == verdict
