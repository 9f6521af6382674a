"""The tests each break script of Lemma 2's fixed-point rule gets (``test_break_fixed_point_arms*.py``): its
breaks name constructions, one seeded group of each construction reads its truth, and (slow) 20 groups agree."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from types import ModuleType

import pytest
from break_scripts import break_param


def break_tests(harness: ModuleType, breaks: Mapping[str, str], break_group: Mapping[str, int],
                slow_groups: int = 20, expensive: Collection[str] = ()) -> tuple[Callable[..., None], ...]:
    """The three tests of ``harness.ATTACKS``, for a test module to bind to their names: the constructions named
    in ``breaks`` are ``xfail(strict=True)`` with what breaks, a break that group 0 does not show is read on its
    group in ``break_group``, and the ``expensive`` constructions' one-group reading runs only in the slow suite."""

    def test_every_break_names_a_construction():
        names = {a.name for a in harness.ATTACKS}
        assert set(breaks) <= names and set(break_group) <= set(breaks)

    @pytest.mark.parametrize("a", [break_param(a, a.name, breaks, slow=a.name in expensive) for a in harness.ATTACKS])
    def test_construction_reads_its_truth(a):
        """One group: each arm's outcome lies in the construction's truth."""
        found = harness.outcomes(a, break_group.get(a.name, 0))
        for outcome, truth in zip(found, a.truth, strict=True):
            assert outcome in truth

    @pytest.mark.slow
    @pytest.mark.parametrize("a", [break_param(a, a.name, breaks) for a in harness.ATTACKS])
    def test_construction_agrees_over_groups(a):
        """20 groups: outside the truth in at most 5%, a direction outside it in none."""
        judged = harness.judge(a, range(slow_groups))
        assert judged["off"] <= 0.05 and judged["wrong"] == 0.0

    return test_every_break_names_a_construction, test_construction_reads_its_truth, test_construction_agrees_over_groups
