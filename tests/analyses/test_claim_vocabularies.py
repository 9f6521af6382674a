"""Each row's outcomes are tied to the words of the analysis it reads (``Claim.vocabulary``): every
word the analysis can return is an outcome of the row, and every outcome of the row is either such
a word or one the rule adds itself (``ROW_WORDS``, each explained)."""

from __future__ import annotations

import pytest

from analyses.assumption5.along_run import ALONG_OUTCOMES
from analyses.assumption5.scaling import OUTCOMES
from analyses.registry import claims

SKIPPED = {"not measured"}
"""The analysis behind the row did not run (``registry.skipped``, ``result_rule``); every row has it."""

ROW_WORDS: dict[str, set[str]] = {
    "lemma2_stated": SKIPPED,
    "lemma2_implemented": SKIPPED,
    "lemma2_mismatch": SKIPPED,
    # a control of the label part failed, or no controls.json was given:
    "lemma2_fixed_point": SKIPPED | {"not calibrated"},
    # "not testable" also stands for a missing pre-registered group, but it is the analysis's word too:
    "assumption5_paper": SKIPPED,
    "assumption5_implemented": SKIPPED,
    # a control of the rate rule failed (analyses.theorem1.controls):
    "theorem1_rate_reverse": SKIPPED | {"not calibrated"},
    "theorem1_rate_forward": SKIPPED | {"not calibrated"},
    "theorem1_proof_reverse": SKIPPED,
    "theorem1_proof_forward": SKIPPED,
    # no zerolock tune directory among the inputs; "not measured" is never returned by its rule, kept
    # because every row has it (test_analyses_claims):
    "versus_backprop": SKIPPED | {"not tuned"},
    "proposition1": SKIPPED,
    "systems_memory": SKIPPED,
    "systems_throughput": SKIPPED,
}
NO_VOCABULARY: dict[str, str] = {}
"""Rows whose rule passes no analysis word through, with the reason (none today)."""


def _rows():
    return [pytest.param(row, id=row.key) for row in claims()]


def test_every_row_is_listed_here():
    keys = {row.key for row in claims()}
    assert keys <= ROW_WORDS.keys() | NO_VOCABULARY.keys(), "list a new row in ROW_WORDS or NO_VOCABULARY"
    assert not ROW_WORDS.keys() & NO_VOCABULARY.keys()


@pytest.mark.parametrize("row", _rows())
def test_the_analysis_words_are_the_rows_outcomes(row):
    if row.key in NO_VOCABULARY:
        assert not row.vocabulary, f"{row.key}: has a vocabulary, remove it from NO_VOCABULARY"
        return
    assert row.vocabulary, f"{row.key}: no vocabulary (set Claim.vocabulary or list it in NO_VOCABULARY)"
    missing = [w for w in row.vocabulary if w not in row.outcomes]
    assert not missing, f"{row.key}: its analysis can return {missing}, not among its outcomes"
    own = ROW_WORDS[row.key]
    assert own <= row.outcomes.keys(), f"{row.key}: a row word {own - row.outcomes.keys()} is not an outcome"
    unexplained = [w for w in row.outcomes if w not in row.vocabulary and w not in own]
    assert not unexplained, f"{row.key}: outcomes {unexplained} are neither the analysis's words nor the row's"


def test_the_step_scaling_row_words_hold_the_along_run_words():
    """Assumption 5's rows read ``GroupScaling.outcome``: ρ_t along the run's word, or "not testable"."""
    assert set(ALONG_OUTCOMES) | {"not testable"} <= set(OUTCOMES)
