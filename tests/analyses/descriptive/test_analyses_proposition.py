"""Proposition 1 on the rising pairs, on synthetic probe records with known answers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from synthetic_runs import laid_out

from analyses.descriptive.proposition_pairs import (
    OUTCOMES,
    PairCounts,
    PropositionSet,
    proposition_group,
    proposition_outcome,
    proposition_run,
)
from analyses.results import NotMeasured, load_result
from zerolock_theory.records import MINIMIZER, MINIMIZER_INITIAL

K = 3


def _frame(seed: int, *, d_ce: float, gap: float, steps: int = 20, k0: bool = True, violate_at=(),
           noise: float = 1e-4) -> pd.DataFrame:
    """CE_k = 4 + k·d_ce (+ noise), δ_k = gap; at ``violate_at`` steps CE_2 = CE_1 + δ_2 + 0.01."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(steps):
        ce = [4.0 + k * d_ce + noise * rng.normal() for k in range(K + 1)]
        rec = {"step": t}
        for k in range(0 if k0 else 1, K + 1):
            rec[MINIMIZER.key(k, "ce")] = ce[k]
        for k in range(1, K + 1):
            rec[MINIMIZER.key(k, "gap")] = gap
        if t in violate_at:
            rec["probe/minimizer/2/ce"] = ce[1] + gap + 0.01
        rows.append(rec)
    return laid_out(pd.DataFrame(rows), K)


def _group(frames):
    return proposition_group([(f"s{i}", f) for i, f in enumerate(frames)])


def test_no_rising_pair_is_not_tested():
    """CE falls with depth at every step (as at step 0 of the package's runs): nothing to test."""
    group = _group([_frame(s, d_ce=-0.2, gap=0.05) for s in range(5)])
    assert group.outcome == "not tested" and group.pairs.n_rising == 0 and group.pairs.n_pairs == 5 * 20 * 3
    assert group.violation_share is None and group.max_tightness is None
    assert group.baseline.n_pairs == 15 and group.baseline.n_rising == 0


def test_the_baseline_is_the_untrained_model_when_logged():
    frames = [_frame(s, d_ce=0.1, gap=0.4, noise=0.0) for s in range(3)]
    assert not proposition_run(frames[0]).baseline_untrained  # first probed step instead
    for f in frames:  # at ω^0 CE falls with depth, except a rise of 0.5 at k = 3 with delta 0.2
        for k, ce in enumerate([4.0, 3.8, 3.6, 4.1]):
            f.loc[0, MINIMIZER_INITIAL.key(k, "ce")] = ce
        for k in range(1, K + 1):
            f.loc[0, MINIMIZER_INITIAL.key(k, "gap")] = 0.2
    run = proposition_run(frames[0])
    assert run.baseline_untrained and run.baseline == PairCounts(3, 1, 1)
    assert _group(frames).baseline == PairCounts(9, 3, 3) and _group(frames).outcome == "holds"


def test_rising_pairs_covered_by_the_slack_hold_with_their_tightness():
    group = _group([_frame(s, d_ce=0.1, gap=0.4, noise=0.0) for s in range(5)])
    assert group.outcome == "holds" and group.pairs.n_rising == group.pairs.n_pairs == 300
    assert group.max_tightness == pytest.approx(0.25) and group.median_tightness == pytest.approx(0.25)
    assert group.violation_share.estimate == 0.0 and 0.0 < group.violation_share.high < 0.05
    assert group.runs[0].rising_at[:2] == [[0, 1], [0, 2]] and group.baseline.n_rising == 15


def test_rising_pairs_beyond_the_slack_are_violated_at_m_of_n():
    group = _group([_frame(s, d_ce=0.3, gap=0.1, noise=0.0) for s in range(5)])
    assert group.outcome == "violated" and group.pairs.n_violations == group.pairs.n_rising == 300
    assert group.max_tightness == pytest.approx(3.0) and group.violation_share.low > 0.9
    few = _group([_frame(0, d_ce=-0.2, gap=0.05, violate_at=(3,))] + [_frame(s, d_ce=-0.2, gap=0.05)
                                                                       for s in range(1, 5)])
    assert few.outcome == "violated" and (few.pairs.n_rising, few.pairs.n_violations) == (1, 1)
    assert few.runs[0].rising_at == [[3, 2]]


def test_the_old_rule_inversion_is_gone():
    """Three seeds each violating once, and two seeds violating at every step: both "violated"."""
    once = [_frame(s, d_ce=-0.2, gap=0.05, violate_at=(5,)) for s in range(3)]
    every = [_frame(s, d_ce=-0.2, gap=0.05, violate_at=range(20)) for s in range(2)] + [
        _frame(2, d_ce=-0.2, gap=0.05)]
    assert _group(once).outcome == _group(every).outcome == "violated"


def test_float_tolerance_not_exact_equality():
    frame = _frame(0, d_ce=0.0, gap=0.0, steps=3, noise=0.0)
    frame["probe/minimizer/2/ce"] = frame["probe/minimizer/1/ce"] + 1e-9  # a rounding-sized rise
    run = proposition_run(frame)
    assert run.pairs.n_rising == run.pairs.n_violations == 0
    frame["probe/minimizer/2/ce"] = frame["probe/minimizer/1/ce"] + 1e-3
    run = proposition_run(frame)
    assert run.pairs.n_violations == 3 and run.tightness == [float("inf")] * 3  # δ = 0: unbounded tightness


def test_without_ce0_pairs_start_at_chunk_two_and_few_seeds_are_not_testable():
    assert proposition_run(_frame(0, d_ce=-0.1, gap=0.0, k0=False)).chunks == [2, 3]
    assert _group([_frame(s, d_ce=0.3, gap=0.1) for s in range(2)]).outcome == "not testable"
    with pytest.raises(NotMeasured, match="minimizers"):
        proposition_run(laid_out(pd.DataFrame({"step": [0]}), K))


@pytest.mark.parametrize(("seeds", "rising", "violations", "outcome"),
                         [(2, 5, 1, "not testable"), (3, 0, 0, "not tested"), (3, 4, 0, "holds"),
                          (3, 4, 1, "violated")])
def test_every_outcome_is_reachable(seeds, rising, violations, outcome):
    assert proposition_outcome(seeds, rising, violations) == outcome and outcome in OUTCOMES


def test_result_round_trips_through_json():
    group = _group([_frame(s, d_ce=0.1, gap=0.4, noise=0.0) for s in range(3)])
    result = PropositionSet([group], ["bad"])
    assert load_result(result.to_json()) == result


# -- monotonicity: adding a violation never gives a weaker outcome -------------------------------------------------

STRENGTH = {"holds": 0, "not tested": 0, "violated": 1}  # "not testable" depends on the seeds only


def _table(draw) -> list[pd.DataFrame]:
    n_seeds, steps = draw(st.integers(1, 5)), draw(st.integers(1, 4))
    value = st.sampled_from([3.0, 3.5, 4.0, 4.2, 5.0])
    frames = []
    for _ in range(n_seeds):
        rec = {"step": list(range(steps))}
        for k in range(K + 1):
            rec[MINIMIZER.key(k, "ce")] = [draw(value) for _ in range(steps)]
        for k in range(1, K + 1):
            rec[MINIMIZER.key(k, "gap")] = [draw(st.sampled_from([0.0, 0.1, 1.0])) for _ in range(steps)]
        frames.append(laid_out(pd.DataFrame(rec), K))
    return frames


@st.composite
def tables_with_a_new_violation(draw):
    frames = _table(draw)
    changed = [f.copy() for f in frames]
    i = draw(st.integers(0, len(frames) - 1))
    t = draw(st.integers(0, len(frames[i]) - 1))
    k = draw(st.integers(1, K))
    f = changed[i]
    prev = f.loc[t, MINIMIZER.key(k - 1, "ce")]
    if draw(st.booleans()):  # raise CE_k above CE_(k-1) + delta_k
        f.loc[t, MINIMIZER.key(k, "ce")] = prev + f.loc[t, MINIMIZER.key(k, "gap")] + 0.5
    else:  # remove the slack of a pair made to rise
        f.loc[t, MINIMIZER.key(k, "ce")] = max(f.loc[t, MINIMIZER.key(k, "ce")], prev + 0.5)
        f.loc[t, MINIMIZER.key(k, "gap")] = 0.0
    return frames, changed


@settings(max_examples=50)  # each example builds two groups of up to 5 runs
@given(tables_with_a_new_violation())
def test_adding_a_violation_never_weakens_the_outcome(pair):
    before, after = (_group(frames) for frames in pair)
    assert after.pairs.n_violations >= 1
    if before.outcome == "not testable":
        assert after.outcome == "not testable"  # the seeds did not change
    else:
        assert after.outcome == "violated" and STRENGTH[after.outcome] >= STRENGTH[before.outcome]
