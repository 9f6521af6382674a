"""The tuned comparison: selection on validation only, invariance to the grid's labels, Holm, known answers."""

from __future__ import annotations

import math

import pytest

from analyses.versus.families import (
    GRID,
    PERMUTED,
    SEEDS,
    logistic_runs,
    relabel,
    split_disagreement,
)
from analyses.versus.tuned_versus import holm, tuned_versus
from analyses.versus.tuning import TunedRun, grid_seeds, select, select_all


def test_selection_reads_the_validation_split_only() -> None:
    runs = split_disagreement(lrs=(0.01, 0.1, 1.0))
    # the test split prefers 1.0 by a nat per grid step; validation prefers 0.01
    assert {m: s.lr for m, s in select_all(runs).items()} == dict.fromkeys(
        ("zerolock-forward", "zerolock-reverse", "backprop"), 0.01)
    result = tuned_versus(runs)
    assert all(m.lr == 0.01 for m in result.methods.values())
    # any test values leave the choice alone
    scrambled = [TunedRun(r.method, r.lr, r.seed, r.validation, -r.test * 7.0, r.steps) for r in runs]
    assert {m: s.lr for m, s in select_all(scrambled).items()} == {m: s.lr for m, s in select_all(runs).items()}


def _summary(result):
    return ({m: (r.seeds, r.test_ce) for m, r in result.methods.items()},
            {v: (c.outcome, c.difference, c.p_value, c.steps_to_backprop) for v, c in result.comparisons.items()})


@pytest.mark.parametrize("handicap", [0.0, 0.3])
def test_outcome_does_not_change_when_the_grid_is_relabelled(handicap: float) -> None:
    runs = logistic_runs(GRID, SEEDS, handicap=handicap, steps=150)
    plain, moved = tuned_versus(runs), tuned_versus(relabel(runs, PERMUTED))
    assert _summary(plain) == _summary(moved)
    for method, result in plain.methods.items():
        assert PERMUTED[result.lr] == moved.methods[method].lr


def test_known_answers_same_algorithm_and_a_worse_one() -> None:
    same = tuned_versus(logistic_runs(GRID, SEEDS, steps=150))
    assert {c.outcome for c in same.comparisons.values()} == {"no difference detected"}
    worse = tuned_versus(logistic_runs(GRID, SEEDS, handicap=0.3, steps=150))
    assert {c.outcome for c in worse.comparisons.values()} == {"zerolock worse"}
    assert all(c.steps_to_backprop is None for c in worse.comparisons.values())  # not reached within the budget


def test_confirmation_seeds_do_not_enter_the_selection() -> None:
    runs = [TunedRun("backprop", lr, s, 3.0 + lr, 3.0, 10) for lr in (0.1, 0.2, 0.4) for s in (0, 1)]
    runs.append(TunedRun("backprop", 0.4, 2, -100.0, 3.0, 10))  # an extra seed at one eta_0 only
    assert grid_seeds(runs, "backprop") == (0, 1)
    assert select(runs, "backprop").lr == 0.1


def test_a_diverged_run_is_never_chosen_and_ties_go_to_the_smaller_eta() -> None:
    runs = [TunedRun("backprop", 0.4, s, math.inf, math.inf, 3) for s in (0, 1)]
    runs += [TunedRun("backprop", lr, s, 2.0, 2.0, 10) for lr in (0.1, 0.2) for s in (0, 1)]
    choice = select(runs, "backprop")
    assert choice.lr == 0.1 and choice.scores[0.4] == math.inf and choice.on_boundary


def test_holm_over_two() -> None:
    assert holm({"a": 0.02, "b": 0.04}, 0.05) == {"a": True, "b": True}
    assert holm({"a": 0.03, "b": 0.04}, 0.05) == {"a": False, "b": False}  # 0.03 > 0.05 / 2
    assert holm({"a": 0.01, "b": 0.2}, 0.05) == {"a": True, "b": False}
    assert holm({"a": math.nan, "b": 0.01}, 0.05) == {"a": False, "b": True}


def test_a_run_just_started_by_another_shard_is_skipped(tmp_path) -> None:
    """A shard selecting while another has just created its next run (config, empty metrics)."""
    import json

    from analyses.versus.tuning import load_tuned

    started = tmp_path / "zerolock-reverse_lr-0.00625_seed-2"
    started.mkdir()
    (started / "config.json").write_text(json.dumps({"method": {"name": "zerolock"}, "optim": {"lr": 0.00625},
                                                     "run": {"seed": 2, "steps": 100}}))
    (started / "metrics.jsonl").write_text("")
    assert load_tuned(tmp_path) == []
