"""Theorem 1 (a)'s words in every rendering: a floor's start is part of the outcome's words on the
command line, in the verdict lines the commands print, in README's table block and verdicts.md, and
on the HTML page's card and table (issue 48)."""

from __future__ import annotations

import numpy as np

from analyses.registry import claim, measured_text, reason_text
from analyses.theorem1.claim_rate import GroupRate
from analyses.theorem1.families import rate_series
from analyses.theorem1.rate import DECAYS, FLATTENS, describe_rate
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


def test_a_fall_words_floor_caveat_is_in_every_rendering():
    rng = np.random.default_rng(4807)
    rate = describe_rate([rate_series("1/sqrt(T)", 1000, rng, 1.0) for _ in range(5)])
    assert rate.outcome in DECAYS and rate.floor_after is not None
    found = GroupRate("zerolock reverse", [], rate, rate, rate_power(None, rate.seeds, rate.horizon))
    verdict = Verdict("theorem1_rate_reverse", rate.outcome, Evidence(rate.reason, result=found))
    caveat = f"a floor from T = {rate.floor_after} on is not excluded (power {rate.floor_power:.2f} at this noise)"
    assert caveat in rate.sentence
    assert caveat in measured_text(verdict)
    assert caveat in claim(verdict.claim).headline(verdict.evidence)
    assert caveat in _card_headline(verdict)
    assert caveat in "\n".join(verdict_lines([verdict]))
    assert caveat in verdict_markdown([verdict], "scope")
