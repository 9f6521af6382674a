"""The "ZeroLock against backprop" row decides only on a tuned comparison, through the row's own rule."""

from __future__ import annotations

from analyses.registry import ClaimInputs, claim
from analyses.results import load_result
from analyses.versus.claim import KEY, NOT_TUNED, combined
from analyses.versus.families import GRID, PERMUTED, SEEDS, logistic_runs, relabel
from analyses.versus.tuned_versus import tuned_versus


def _verdict(results):
    return claim(KEY).decide(ClaimInputs(results, {}))


def test_row_decides_only_on_a_tuned_directory() -> None:
    untuned = _verdict({})
    assert untuned.outcome == NOT_TUNED and untuned.evidence.p_value is None
    worse = tuned_versus(logistic_runs(GRID, SEEDS, handicap=0.3, steps=150))
    row = _verdict({"versus_tuned": worse})
    assert row.outcome == combined(worse) == "forward: zerolock worse; reverse: zerolock worse"
    assert claim(KEY).outcomes[row.outcome].tone == "fails" and row.evidence.p_value < 0.05
    same = _verdict({"versus_tuned": tuned_versus(logistic_runs(GRID, SEEDS, steps=150))})
    assert same.outcome == "forward: no difference detected; reverse: no difference detected"


def test_row_is_the_same_when_the_grid_is_relabelled_and_round_trips() -> None:
    runs = logistic_runs(GRID, SEEDS, handicap=0.3, steps=150)
    plain, moved = tuned_versus(runs), tuned_versus(relabel(runs, PERMUTED))
    assert _verdict({"versus_tuned": plain}).outcome == _verdict({"versus_tuned": moved}).outcome
    again = load_result(plain.to_json())
    assert again == plain  # dict[int, float] keys come back as integers
    assert "reaches backprop's" in claim(KEY).measured(_verdict({"versus_tuned": again}).evidence)
