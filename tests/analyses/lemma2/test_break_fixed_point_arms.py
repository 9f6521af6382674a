"""Lemma 2's fixed-point rule, each arm on its own, against a hostile referee's constructions
(``scripts/break_fixed_point_arms.py``).

Every construction's records are built per seed and read through the row's own ``reached`` and
``fixed_point_decision``. Where the rule agrees with the construction's truth the test is plain;
where it does not (outside the truth in more than 5% of 20 seeded groups, or a direction outside
the truth at all), the test is ``xfail(strict=True)`` with what breaks, so that it turns red the day
the rule reads the construction right (remove the mark then).

Default suite: one seeded group of 5 seeds per construction (group 0, or for a break that group 0
does not show, the first group of the 20 that shows it). Slow: 20 groups per construction, the
table's shares.
"""

from __future__ import annotations

import pytest
from break_scripts import load_script
from fixed_point_breaks import break_tests

from analyses.lemma2.fixed_point import ARM_OUTCOMES, MIN_TARGET_TV

harness = load_script("break_fixed_point_arms")

OWN, OTHER, NONE, UNTESTABLE = ARM_OUTCOMES
SLOW_GROUPS = 20

_FLAT = ("on a nearly flat p_(k-1), m_k and g_k lie on one ray from p_(k-1) (p_(k-1) plus a spike at the label), so "
         "a move toward one differs from a move toward the other only by a label-free flattening toward "
         "p_(k-1)^(1-a), which the floor must not count: both arms read 'no difference detected' with the least "
         "detectable move stated (several shares of the way)")
BREAKS: dict[str, str] = {
    "nearly flat p_(k-1) (spread 0.05): CE -> m_k, reverse -> g_k, 50%": _FLAT,
    "nearly flat p_(k-1): exact optima": _FLAT,
}
BREAK_GROUP: dict[str, int] = {}
"""Breaks that group 0 does not show: the first of the 20 groups that shows each (none at present)."""


test_every_break_names_a_construction, test_construction_reads_its_truth, test_construction_agrees_over_groups = (
    break_tests(harness, BREAKS, BREAK_GROUP, SLOW_GROUPS))


def test_a_start_beyond_g_is_read_by_the_projection_not_by_tv():
    """From a start past g_k on the line p^0 → g_k → m_k, TV(p, m_k) − TV(p, g_k) equals TV(m_k, g_k) from p^0
    to g_k, so the TV change E_R is 0 while p^R = g_k; the move's component along m_k − g_k is −1 (all the way
    to g_k), which the arms decide on."""
    seeds = harness.records(harness.attack("start beyond g_k: CE -> m_k 50%, reverse reaches g_k"), 0)
    for s in seeds:
        assert s.reverse.tv_g == pytest.approx(0.0, abs=1e-12)
        assert s.reverse.change == pytest.approx(0.0, abs=1e-9)
        assert s.arm_along("reverse") == pytest.approx(1.0, abs=1e-6)
        assert s.arm_along("forward") == pytest.approx(0.5, abs=1e-6)


def test_m_close_to_g_at_extreme_alpha():
    """The constructions at α = 0.99 and α = 0.01 do have m_k ≈ g_k (the truth 'undecidable' rests on it), and
    both arms abstain with the stated least distance at both ends of α."""
    for name in ("alpha = 0.99 (m_k ~ g_k): CE -> m_k, reverse -> g_k, 80%",
                 "alpha = 0.01 (m_k ~ g_k): CE -> m_k, reverse -> g_k, 80%"):
        assert all(s.tv_m_g < MIN_TARGET_TV for s in harness.records(harness.attack(name), 0))
        found = harness.decide(harness.attack(name))
        assert all(a.outcome == UNTESTABLE and a.reason.startswith("targets closer than") for a in found.arms)


def test_an_undecided_arm_states_its_least_detectable_move():
    """A missed half-way move on a nearly flat p_(k-1) reads 'no difference detected' on both arms, each with a
    least detectable move above the move made and at least its floor."""
    found = harness.decide(harness.attack("nearly flat p_(k-1) (spread 0.05): CE -> m_k, reverse -> g_k, 50%"))
    for arm in found.arms:
        assert arm.outcome == NONE and arm.least_detectable > 0.5 and arm.least_detectable >= arm.floor


def test_lean_raises_the_floor():
    """Readouts leaning toward the labels raise the arms' floor above the catalogue batches' floor."""
    plain = harness.decide(harness.attack("CE -> m_k, reverse -> g_k, 50%"))
    leaning = harness.decide(harness.attack("leaning batch: CE -> m_k, reverse -> g_k, 50%"))
    assert leaning.arm_floor > plain.arm_floor
