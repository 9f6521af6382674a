"""The tests each break script of Theorem 1 (a)'s rate rule gets (``test_break_rate*.py``): its breaks name
constructions, no construction outside the named ones contradicts its truth above the level, and each
construction states its truth over the script's groups (seed 0)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping
from types import ModuleType

import pytest
from break_scripts import break_param


def break_tests(harness: ModuleType, breaks: Mapping[str, str], contradicted: Collection[str], share: float,
                groups: int = 50) -> tuple[Callable[..., object], ...]:
    """The three tests of ``harness.constructions()``, each construction's verdict read once, for a test module
    to bind to their names: the constructions named in ``breaks`` are ``xfail(strict=True)`` with
    what breaks; those in ``contradicted`` must still read contradicting words in more than ``share`` of the
    ``groups`` groups, every other construction in at most ``share``."""

    @functools.cache
    def verdict(name: str) -> tuple[float, float, str]:
        c = harness.by_name(name)
        return harness.verdict(c, harness.shares(c, groups, seed=0), groups)

    def test_no_construction_contradicts_its_truth_above_the_level_but_the_named_ones():
        """Contradicting words in at most 5% of the groups for every construction but the breaks named in
        ``CONTRADICTED`` (which must still break: a fixed one turns this red)."""
        for c in harness.constructions():
            right, wrong, word = verdict(c.name)
            if c.name in contradicted:
                assert wrong > share and word == "**breaks: wrong words**", c.name
            else:
                assert wrong <= share, (c.name, wrong)

    def test_breaks_name_constructions():
        names = {c.name for c in harness.constructions()}
        assert set(breaks) <= names and set(contradicted) <= set(breaks)
        assert len(names) == len(harness.constructions())

    @pytest.mark.parametrize("name", [break_param(c.name, c.name, breaks) for c in harness.constructions()])
    def test_rule_states_the_truth(name):
        right, wrong, word = verdict(name)
        assert wrong <= share, f"contradicting words in {wrong:.0%} of groups"
        assert right >= 1.0 - share, f"the truth's words in only {right:.0%} of groups"
        assert word == "yes"

    return (test_no_construction_contradicts_its_truth_above_the_level_but_the_named_ones,
            test_breaks_name_constructions, test_rule_states_the_truth)
