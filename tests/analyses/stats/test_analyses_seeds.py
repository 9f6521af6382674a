"""Seed-level intervals and the diverged-run rule (analyses/stats/seeds.py)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from synthetic_runs import laid_out

from analyses.stats.seeds import (
    DIVERGENCE_MARGIN,
    diverged,
    objective_trend,
    own_objective,
    regime_check,
    seed_interval,
)
from zerolock_theory.records import CHUNK


def test_seed_interval_covers_at_nominal_level():
    rng = np.random.default_rng(0)
    reps, hits = 2000, 0
    for _ in range(reps):
        iv = seed_interval(rng.normal(0.3, 0.2, size=3))
        hits += iv.low <= 0.3 <= iv.high
    assert 0.93 <= hits / reps <= 0.97


def test_seed_interval_not_testable_below_min_seeds():
    assert seed_interval([1.0, 2.0]) is None
    assert seed_interval([1.0, 2.0, float("nan")]) is None
    iv = seed_interval([1.0, 1.0, 1.0])
    assert (iv.estimate, iv.low, iv.high) == (1.0, 1.0, 1.0)


def _run(loss_by_chunk: list[np.ndarray], ce: np.ndarray, eval_every: int = 10) -> pd.DataFrame:
    """A metrics frame: ``chunk/{k}/loss`` per step, ``train/final_ce`` = ``ce``, held-out CE every ``eval_every``."""
    steps = len(ce)
    frame = pd.DataFrame({"step": np.arange(steps), "train/final_ce": ce})
    for k, loss in enumerate(loss_by_chunk, start=1):
        frame[CHUNK.key(k, "loss")] = loss
    frame["eval/ce"] = [ce[t] if (t + 1) % eval_every == 0 else math.nan for t in range(steps)]
    frame["eval/ce_initial"] = [ce[0]] + [math.nan] * (steps - 1)
    return laid_out(frame, max(1, len(loss_by_chunk)))


def test_reverse_objective_raising_task_ce_is_stable():
    """The reverse local losses fall while the task CE rises (p_0 nearly uniform): not diverged."""
    t = np.arange(40)
    falling = [2.0 - 0.01 * t, 1.5 - 0.005 * t]
    run = _run(falling, 6.24 + 0.01 * t)  # held-out CE rises 6.24 -> 6.63
    assert diverged(run) is None
    trend = objective_trend(run)
    assert trend.column == "sum of chunk/k/loss" and trend.stable and trend.steps == 40
    assert trend.first == pytest.approx(np.mean([3.5 - 0.015 * i for i in range(4)]))
    assert trend.last == pytest.approx(np.mean([3.5 - 0.015 * i for i in range(36, 40)]))


def test_own_objective_rising_is_diverged_with_held_out_ce_as_outcome():
    t = np.arange(40)
    rising = [2.0 + 0.01 * t, 1.5 + 0.0 * t]
    flag = diverged(_run(rising, 5.0 - 0.01 * t))  # task CE falls: still the objective decides
    assert flag is not None and "own objective" in flag.reason and flag.end_loss > flag.start_loss
    assert flag.start_ce == 5.0 and flag.end_ce == pytest.approx(5.0 - 0.39)
    assert DIVERGENCE_MARGIN == 0.0 and diverged(_run(rising, 5.0 - 0.01 * t), margin=1.0) is None


def test_noisy_but_flat_objective_compares_tenth_means():
    rng = np.random.default_rng(0)
    base = 2.0 + 0.05 * rng.standard_normal(200)
    base[:20] += 0.1  # the first tenth is higher: stable, although single steps at the end exceed it
    assert diverged(_run([base], np.full(200, 4.0))) is None
    base[-20:] += 0.2
    assert diverged(_run([base], np.full(200, 4.0))) is not None


def test_backprop_objective_is_its_loss_and_fallbacks():
    t = np.arange(20)
    frame = laid_out(pd.DataFrame({"step": t, "chunk/4/loss": 3.0 - 0.01 * t, "train/final_ce": 3.0 + 0.01 * t}), 4)
    assert own_objective(frame)[0] == "sum of chunk/k/loss" and diverged(frame) is None  # L only (chunk K)
    assert own_objective(frame.assign(**{"train/loss": 1.0}))[0] == "train/loss"
    only_ce = frame.drop(columns=["chunk/4/loss"])
    assert own_objective(only_ce)[0] == "train/final_ce" and diverged(only_ce) is not None
    assert objective_trend(laid_out(pd.DataFrame({"step": [0]}), 1)) is None and objective_trend(frame.iloc[:1]) is None


def test_diverged_flags_nonfinite_losses():
    ok = laid_out(pd.DataFrame({"step": [0, 1], "train/loss": [2.0, 1.9], "eval/ce": [5.0, 9.0]}), 2)
    assert diverged(ok) is None  # held-out CE is not a criterion
    assert "non-finite" in diverged(ok.assign(**{"train/loss": [2.0, math.inf]})).reason
    chunk = ok.assign(**{"chunk/2/loss": [1.0, math.inf]})
    assert "non-finite chunk/2/loss at step 1" == diverged(chunk).reason


def test_share_interval_is_clipped_to_the_unit_interval():
    from analyses.stats.seeds import share_interval

    iv = share_interval([0.9, 1.0, 0.6])
    assert 0.0 <= iv.low < iv.estimate < iv.high == 1.0
    assert share_interval([0.0, 0.0, 0.0]).high == 0.0 and share_interval([0.5, 0.5]) is None


def test_regime_check_is_stable_on_the_own_objective_with_held_out_ce_as_outcome():
    t = np.arange(40)
    reverse = regime_check(_run([2.0 - 0.01 * t, 1.5 - 0.005 * t], 6.24 + 0.01 * t))
    assert reverse["ok"] is True and reverse["eval_ce_start"] == 6.24 and reverse["eval_ce_end"] == pytest.approx(6.63)
    assert reverse["why"].startswith("own objective (sum of chunk/k/loss) 3.4775 -> 2.9375")
    assert "held-out CE 6.2400 -> 6.6300" in reverse["why"]
    rising = regime_check(_run([2.0 + 0.01 * t], 5.0 - 0.01 * t))
    assert rising["ok"] is False and rising["objective_end"] > rising["objective_start"]
    broken = regime_check(_run([np.where(t == 30, math.inf, 2.0)], np.full(40, 5.0)))
    assert broken["ok"] is False and broken["why"].startswith("non-finite chunk/1/loss at step 30")
    assert regime_check(laid_out(pd.DataFrame({"step": [0, 1]}), 1))["why"] == "no training objective logged"


def _with_held_out(frame: pd.DataFrame, start: float, values: list[float], eval_every: int = 10) -> pd.DataFrame:
    """``frame`` with the own objective on the fixed held-out batches: ``start`` at ω^0, then ``values``."""
    frame = frame.copy()
    frame["eval/objective_initial"] = [start] + [math.nan] * (len(frame) - 1)
    held = iter(values)
    frame["eval/objective"] = [next(held) if (t + 1) % eval_every == 0 else math.nan for t in range(len(frame))]
    return frame


def test_the_held_out_own_objective_decides_not_the_training_batches():
    """Batches that get harder along the data order raise the training objective of a run that
    learns (the embedded model's seed-0 order: +0.27 nats at eta_0 = 0.003): the paired held-out
    objective decides, both ways."""
    t = np.arange(40)
    harder_batches = _run([5.2 + 0.007 * t], 5.5 - 0.002 * t)
    assert regime_check(harder_batches)["ok"] is False  # without the held-out log: the training trend
    learns = regime_check(_with_held_out(harder_batches, 5.54, [5.50, 5.45, 5.41, 5.38]))
    assert learns["ok"] is True and learns["objective_start"] == 5.54 and learns["objective_end"] == 5.38
    assert learns["why"].startswith("own objective (held-out own objective) 5.5400 -> 5.3800")
    assert diverged(_with_held_out(harder_batches, 5.54, [5.50, 5.45, 5.41, 5.38])) is None
    easier_batches = _run([5.4 - 0.007 * t], 5.5 - 0.002 * t)
    rises = _with_held_out(easier_batches, 5.54, [5.9, 6.4, 7.0, 7.2])
    assert regime_check(rises)["ok"] is False and regime_check(easier_batches)["ok"] is True
    why = diverged(rises)
    assert why is not None and (why.start_loss, why.end_loss) == (5.54, 7.2)
