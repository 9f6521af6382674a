"""Tables of a tune directory: every run's CE at the budget, the curves, and a text summary.

* ``runs_table``: one row per finished run (method, η_0, seed, validation and test CE at the
  budget, steps, training seconds): what ``docs/results`` keeps.
* ``curves_table``: one row per (method at its chosen η_0, seed, eval step): steps done,
  measured training seconds up to that step (the sum of ``train/step_time_s``; evaluation
  excluded), test-split CE and each chunk's test-split CE (step 0 = the initial readouts).
* ``summary_text``: the selection and the comparison (``analyses.versus.tuned_versus``) in words.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from analyses.io import RunDataError
from analyses.versus.data import TunedData
from analyses.versus.tuned_versus import TunedVersus, tuned_versus
from analyses.versus.tuning import TunedRun, load_tuned, select_all

__all__ = ["curve_rows", "curves_table", "runs_table", "summary_text"]


def _seconds(run: TunedRun) -> float:
    return math.nan if run.data is None else run.data.seconds


def runs_table(runs: list[TunedRun]) -> pd.DataFrame:
    """One row per run, sorted by method, η_0 and seed."""
    rows = [{"method": r.method, "lr": r.lr, "seed": r.seed, "validation_ce": r.validation, "test_ce": r.test,
             "steps": r.steps, "train_seconds": _seconds(r)} for r in runs]
    return pd.DataFrame(rows).sort_values(["method", "lr", "seed"]).reset_index(drop=True) if rows else pd.DataFrame()


def curve_rows(data: TunedData) -> list[dict]:
    """The rows of one run's test-split curve (``curves_table``'s columns but the run's labels):
    step 0 with the initial values, then each step with a test CE."""
    if data.no_layout:
        raise RunDataError(data.no_layout)
    chunks = data.chunks
    rows = [{"steps": 0, "train_seconds": 0.0, "test_ce": data.test_initial,
             **{f"chunk_{k}": float(v) for k, v in zip(chunks, data.chunk_initial, strict=True)}}]
    for i, (step, ce) in enumerate(zip(data.test.steps, data.test.ce, strict=True)):
        rows.append({"steps": int(step) + 1, "train_seconds": float(data.wall[i]), "test_ce": float(ce),
                     **{f"chunk_{k}": float(data.chunk_ce[i, j]) for j, k in enumerate(chunks)}})
    return rows


def curves_table(runs: list[TunedRun], *, chosen_only: bool = True) -> pd.DataFrame:
    """The test-split curves of every run (of each method's chosen η_0 only, by default)."""
    chosen = {m: s.lr for m, s in select_all(runs).items()}
    keep = [r for r in runs if r.data is not None and (not chosen_only or chosen.get(r.method) == r.lr)]
    rows = [{"method": run.method, "lr": run.lr, "seed": run.seed, **row} for run in keep for row in curve_rows(run.data)]
    return pd.DataFrame(rows)


def _fmt(x) -> str:
    return "-" if x is None else str(x)


def describe(result: TunedVersus) -> str:
    """The comparison in a few lines of plain text."""
    lines = [f"budget {result.budget} steps; test-split held-out CE at the budget (mean [{result.level:.0%} "
             "interval over seeds]); eta_0 chosen on the validation split"]
    for m, r in result.methods.items():
        scores = ", ".join(f"{lr:g}: {v:.4f}" for lr, v in sorted(r.validation_scores.items()))
        edge = " (on the grid's edge)" if r.on_boundary else ""
        lines.append(f"  {m}: eta_0 = {r.lr:g}{edge}; test CE {_fmt(r.test_ce)} from {r.initial_test_ce:.4f} "
                     f"at step 0, seeds {list(r.seeds)}; validation CE by eta_0 {{{scores}}}")
    for v, c in result.comparisons.items():
        reach = "not reached within the budget" if c.steps_to_backprop is None else f"{c.steps_to_backprop} steps"
        lines.append(f"  {v} - backprop: {c.outcome} (Holm over {len(result.comparisons)}); difference "
                     f"{_fmt(c.difference)} nats, Bonferroni interval {_fmt(c.difference_bonferroni)}, "
                     f"p = {c.p_value:.3g}, seeds {list(c.seeds)}; backprop's CE {result.target_ce:.4f}: {reach}")
    return "\n".join(lines)


def summary_text(out: str | Path) -> str:
    """``runs_table`` and, once backprop and a variant are selectable, the comparison."""
    runs = load_tuned(out)
    if not runs:
        return f"{out}: no finished run yet"
    text = runs_table(runs).to_string(index=False, float_format=lambda x: f"{x:.4f}")
    try:
        return f"{text}\n\n{describe(tuned_versus(runs))}"
    except ValueError as exc:
        return f"{text}\n\n(no comparison yet: {exc})"
