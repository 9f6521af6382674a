"""A rate-rule control that a short run cannot test is labelled as limited by the horizon, not failed."""

from __future__ import annotations

from types import SimpleNamespace

from analyses.theorem1.controls import rate_controls
from analyses.theorem1.rate import MIN_HORIZON
from reports.theorem1 import _not_passed


def test_a_short_horizon_reads_not_at_this_horizon_and_a_real_miss_reads_no():
    short = SimpleNamespace(outcome="not testable")
    assert _not_passed(short, SimpleNamespace(horizon=32)) == f"not at this horizon (T = 32 < {MIN_HORIZON})"
    assert _not_passed(short, SimpleNamespace(horizon=MIN_HORIZON)) == "NO"
    assert _not_passed(SimpleNamespace(outcome="no decay"), SimpleNamespace(horizon=32)) == "NO"


def test_the_quick_suites_controls_are_all_horizon_limited():
    controls = rate_controls(horizon=32)
    missed = [(c, d) for c, d in zip(controls.checks, controls.descriptions, strict=True) if not c.passed]
    assert missed and all(_not_passed(c, d).startswith("not at this horizon") for c, d in missed)
