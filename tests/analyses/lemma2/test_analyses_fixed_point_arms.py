"""Each arm of the fixed point decided on its own, against the known-answer catalogue
(``analyses.lemma2.families``), through the row's own code.

Every construction states the truth per arm (CE arm: own optimum m_k; reverse arm: own optimum g_k)
and for the row; one seeded group of 5 seeds per construction in the default suite, and the share
of 20 groups that read the truth (per arm) under the slow marker.
"""

from __future__ import annotations

import pytest

from analyses.lemma2.families import CONSTRUCTIONS, construction, decide, shares


@pytest.mark.parametrize("c", CONSTRUCTIONS, ids=[c.name for c in CONSTRUCTIONS])
def test_each_construction_reads_its_truth_per_arm(c):
    found = decide(c)
    assert (found.forward_arm.outcome, found.reverse_arm.outcome) == c.truth
    assert found.outcome == c.row


def test_the_referees_case_reads_reverse_toward_the_others_optimum():
    """Both trainings move toward m_k (CE 60%, reverse 20%): the reverse arm's signed progress toward
    g_k is negative, and the row does not read "each loss moves toward its own optimum"."""
    found = decide(construction("both -> m_k (CE 60%, reverse 20%)"))
    assert found.outcome == "both move toward m_k"
    assert found.progress_reverse.high < 0 < found.progress_forward.low


def test_exact_optima_reach_the_gap_each_way():
    """p^F = m_k and p^R = g_k: the CE arm's signed move toward m_k plus the reverse arm's toward g_k
    is the whole m_k - g_k gap (1 in gap units), per seed."""
    found = decide(construction("exact optima: p^F = m_k, p^R = g_k"))
    for s in found.seeds:
        assert s.progress_forward + s.progress_reverse == pytest.approx(1.0, abs=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("c", CONSTRUCTIONS, ids=[c.name for c in CONSTRUCTIONS])
def test_share_of_groups_reading_the_truth(c):
    found = shares(c, range(20))
    assert found["CE arm"] >= 0.9 and found["reverse arm"] >= 0.9, found
