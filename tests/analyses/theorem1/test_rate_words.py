"""Theorem 1 (a)'s words in every rendering: a floor's start is part of the outcome's words on the
command line, in the verdict lines the commands print, in README's table block and verdicts.md, and
on the HTML page's card and table (issue 48)."""

from __future__ import annotations

import numpy as np

from analyses.registry import claim, measured_text, reason_text
from analyses.theorem1.claim_rate import GroupRate
from analyses.theorem1.families import rate_series
from analyses.theorem1.rate import FLATTENS, describe_rate
from analyses.theorem1.rate_power import rate_power
from analyses.verdict import Evidence, Verdict
from reports.page import _card_headline
from reports.wording import verdict_lines, verdict_markdown


def _floor_verdict() -> tuple[Verdict, str]:
    rng = np.random.default_rng(48)
    rate = describe_rate([rate_series("1 + 16 exp(-T/100) (a floor)", 1000, rng, 0.5) for _ in range(5)])
    assert rate.outcome == FLATTENS and rate.floor_from is not None
    found = GroupRate("zerolock reverse", [], rate, rate, rate_power(None, rate.seeds, rate.horizon))
    words = f"flattens: a floor is not excluded from T = {rate.floor_from}"
    return Verdict("theorem1_rate_reverse", rate.outcome, Evidence(rate.reason, result=found)), words


def test_the_floor_start_is_in_every_rendering():
    verdict, words = _floor_verdict()
    row = claim(verdict.claim)
    assert row.outcomes[FLATTENS].tone == "mixed"  # a description, never "fails" or a refutation
    assert measured_text(verdict).startswith(words)  # README's and verdicts.md's "measured" cell, the HTML table
    assert row.headline(verdict.evidence).startswith(words)  # the printed verdict lines, the publish block
    assert words in reason_text(verdict)
    assert words in _card_headline(verdict)  # the HTML card
    assert words in "\n".join(verdict_lines([verdict]))
    markdown = verdict_markdown([verdict], "scope")
    assert words in markdown and "not consistent" not in markdown
