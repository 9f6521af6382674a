"""Each method at its own best η_0: selection on the validation split only (docs/TUNED.md).

A tuned comparison runs every method over one shared grid of η_0 at the grid seeds, on a
corpus split three ways (train / validation / test, the same split for every run). For each
method:

* the **grid seeds** are the seeds present at every η_0 of the method's grid (extra seeds run
  at one η_0 only would favour it, so they never enter the selection);
* the **selection score** of an η_0 is the mean over the grid seeds of the validation-split
  held-out CE at the budget (``eval/ce``, the last logged value); a non-finite value (a
  diverged run) scores +∞;
* the **chosen η_0** is the η_0 of least score; ties go to the smaller η_0.

The test split (``test/ce``) is never read here: it reports the chosen η_0's runs
(``analyses.versus.tuned_versus``). The choice depends on the runs' validation values only, not on
the order or the labels of the grid (a relabelled grid chooses the same runs).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from analyses.io import RunDataError, load_run
from analyses.versus.data import TunedData, tuned_data

__all__ = ["DIVERGED", "METHODS", "Selection", "TunedRun", "grid_seeds", "load_tuned", "method_of", "select", "select_all"]

METHODS: tuple[str, ...] = ("zerolock-forward", "zerolock-reverse", "backprop")
"""The methods of a tuned comparison, by the name a run's config gives (``method_of``)."""
DIVERGED = "DIVERGED"
"""Marker file of a run stopped by a non-finite loss (its CE at the budget counts as +∞)."""


@dataclass(frozen=True)
class TunedRun:
    """One finished run of a tuned grid: its method, η_0, seed, and CE at the budget on both splits."""

    method: str
    lr: float
    seed: int
    validation: float
    test: float
    steps: int
    data: TunedData | None = field(default=None, compare=False, repr=False)  # ``analyses.versus.data.tuned_data``
    path: Path | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Selection:
    """One method's chosen η_0, the score of every η_0, and the seeds that scored them."""

    method: str
    lr: float
    scores: dict[float, float]
    seeds: tuple[int, ...]

    @property
    def on_boundary(self) -> bool:
        """The chosen η_0 is the grid's smallest or largest (a wider grid might choose beyond it)."""
        return len(self.scores) > 1 and self.lr in (min(self.scores), max(self.scores))


def method_of(config: dict) -> str:
    """``zerolock-forward``, ``zerolock-reverse`` or ``backprop`` from a run's config."""
    method = config.get("method", {})
    if method.get("name") == "backprop":
        return "backprop"
    return f"zerolock-{method.get('direction', 'forward')}"


def grid_seeds(runs: Iterable[TunedRun], method: str) -> tuple[int, ...]:
    """The seeds present at every η_0 of ``method``'s runs (sorted)."""
    mine = [r for r in runs if r.method == method]
    by_lr: dict[float, set[int]] = {}
    for run in mine:
        by_lr.setdefault(run.lr, set()).add(run.seed)
    if not by_lr:
        return ()
    return tuple(sorted(set.intersection(*by_lr.values())))


def select(runs: Sequence[TunedRun], method: str) -> Selection:
    """The η_0 of least mean validation CE over the grid seeds (module docstring).

    Raises ``ValueError`` when the method has no run or no seed common to its whole grid.
    """
    seeds = grid_seeds(runs, method)
    if not seeds:
        raise ValueError(f"{method}: no seed was run at every eta_0 of its grid")
    scores: dict[float, float] = {}
    for lr in sorted({r.lr for r in runs if r.method == method}):
        values = [r.validation for r in runs if r.method == method and r.lr == lr and r.seed in seeds]
        finite = all(math.isfinite(v) for v in values)
        scores[lr] = sum(values) / len(values) if finite else math.inf
    chosen = min(scores, key=lambda lr: (scores[lr], lr))
    return Selection(method, chosen, scores, seeds)


def select_all(runs: Sequence[TunedRun], methods: Sequence[str] = METHODS) -> dict[str, Selection]:
    """``select`` for every method that has runs."""
    return {m: select(runs, m) for m in methods if any(r.method == m for r in runs)}


def load_tuned(out: str | Path, *, complete_only: bool = True) -> list[TunedRun]:
    """Every run directory under a tune directory as a ``TunedRun`` (unfinished ones left out)."""
    runs = []
    for path in sorted(p for p in Path(out).iterdir() if (p / "config.json").is_file()):
        if not (path / "metrics.jsonl").is_file():
            if (path / DIVERGED).is_file():  # diverged before its first logged step
                config = json.loads((path / "config.json").read_text())
                runs.append(TunedRun(method_of(config), float(config["optim"]["lr"]), int(config["run"]["seed"]),
                                     math.inf, math.inf, 0, None, path))
            continue
        try:
            run = load_run(path)
        except RunDataError:  # a run another process has just started: no record yet
            if complete_only:
                continue
            raise
        steps = int(run.get("run.steps"))
        done = int(run.metrics["step"].max()) + 1 if len(run.metrics) else 0
        diverged = (path / DIVERGED).is_file()
        if complete_only and done < steps and not diverged:
            continue
        data = tuned_data(run.metrics, path.name)
        val, test = (math.inf, math.inf) if diverged else (data.validation.last_or_nan(), data.test.last_or_nan())
        runs.append(TunedRun(method_of(run.config), float(run.get("optim.lr")), int(run.get("run.seed")),
                             val, test, done, data, path))
    return runs
