"""``zerolock tune``: each method over one shared η_0 grid, then more seeds at each method's choice.

A tune recipe is a training recipe plus a ``[tune]`` table (``TuneSpec``): the methods, the
shared grid of η_0, the grid seeds and the confirmation seeds. Its data table must split the
corpus three ways (``data.test_fraction`` > 0). Two phases, both through ``workflows.sweep``:

1. **grid**: every method × η_0 × grid seed, ordered so that the most informative runs finish
   first (every method at the middle η_0 at the first seed, then the other η_0 at that seed,
   then the next seeds);
2. **confirm**: for each method, the confirmation seeds at the η_0 that
   ``analyses.versus.tuning.select`` chooses from the grid's validation-split CE (never the test's).

Each run is one directory of the tune directory, named ``{method}_lr-{η_0}_seed-{s}``; a seed
sets the adapters' initialisation and the batch order (``data.order_seed``), while the split
(``data.seed``) stays the same for every run. Run it again after an interruption: finished
runs are skipped, a half-written one resumes from its checkpoint. ``tune.json`` records each
method's choice once every grid run is done.

``shard=(i, n)`` runs every n-th point of each phase from the i-th, so that n processes (one
thread each) share a machine's cores over one tune directory. A shard that finishes its part of
the grid waits for the other shards' grid runs before it selects, so every shard selects from the
whole grid. A shard to which no confirmation run falls (its index is at least the number of
confirmation runs, methods × confirmation seeds) stops after its grid share without waiting, so
that a queue of tunes run shard by shard keeps every core busy.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from analyses.versus.tuning import DIVERGED, METHODS, load_tuned, select_all
from zerolock_theory.app.workflows.sweep import GridPoint, is_complete, run_grid, validate_grid

__all__ = ["METHOD_SETTINGS", "TuneSpec", "check_tune", "confirm_points", "grid_points", "parse_shard", "run_tune",
           "split_recipe"]

METHOD_SETTINGS: dict[str, dict[str, Any]] = {
    "zerolock-forward": {"method.name": "zerolock", "method.direction": "forward", "method.epsilon": 0.0},
    "zerolock-reverse": {"method.name": "zerolock", "method.direction": "reverse", "method.epsilon": 0.1},
    "backprop": {"method.name": "backprop", "method.direction": "forward", "method.epsilon": 0.0},
}
"""Each method's config keys (the reverse objective needs label smoothing ε > 0)."""


@dataclass(frozen=True)
class TuneSpec:
    """The ``[tune]`` table: methods, the shared η_0 grid, grid seeds and confirmation seeds."""

    methods: tuple[str, ...] = METHODS
    """Methods compared (``zerolock-forward``, ``zerolock-reverse``, ``backprop``)."""
    lr_grid: tuple[float, ...] = (0.1, 0.025, 0.00625)
    """The shared grid of η_0 (at least 3 values, all positive)."""
    grid_seeds: tuple[int, ...] = (0, 1)
    """Seeds run at every η_0 (at least 2): the selection reads these."""
    confirm_seeds: tuple[int, ...] = (2,)
    """Seeds added at each method's chosen η_0 (disjoint from grid_seeds)."""
    overrides: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per-method config keys (``[tune.backprop]`` ...), applied over METHOD_SETTINGS."""

    def __post_init__(self) -> None:
        unknown = [m for m in self.methods if m not in METHOD_SETTINGS]
        if unknown or not self.methods:
            raise ValueError(f"tune.methods must be chosen from {list(METHOD_SETTINGS)}, got {list(self.methods)}")
        if len(self.lr_grid) < 3 or len(set(self.lr_grid)) != len(self.lr_grid) or min(self.lr_grid) <= 0:
            raise ValueError(f"tune.lr_grid needs >= 3 distinct positive values, got {list(self.lr_grid)}")
        if len(set(self.grid_seeds)) < 2:
            raise ValueError(f"tune.grid_seeds needs >= 2 distinct seeds, got {list(self.grid_seeds)}")
        if set(self.grid_seeds) & set(self.confirm_seeds):
            raise ValueError("tune.confirm_seeds must be disjoint from tune.grid_seeds")
        extra = set(self.overrides) - set(self.methods)
        if extra:
            raise ValueError(f"[tune.<method>] tables for methods not compared: {sorted(extra)}")

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> TuneSpec:
        """From the ``[tune]`` table; unknown keys raise ``ValueError``."""
        raw = dict(raw)
        overrides = {m: _flat(raw.pop(m)) for m in list(raw) if m in METHOD_SETTINGS and isinstance(raw[m], dict)}
        known = {"methods", "lr_grid", "grid_seeds", "confirm_seeds"}
        if set(raw) - known:
            raise ValueError(f"unknown [tune] key(s): {sorted(set(raw) - known)}")
        return cls(**{k: tuple(v) for k, v in raw.items()}, overrides=overrides)


def _flat(table: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in table.items():
        out.update(_flat(value, f"{prefix}{key}.") if isinstance(value, dict) else {f"{prefix}{key}": value})
    return out


def split_recipe(raw: dict[str, Any]) -> tuple[dict[str, Any], TuneSpec]:
    """A tune recipe → (the base training config, its ``TuneSpec``)."""
    base = {k: v for k, v in raw.items() if k != "tune"}
    return base, TuneSpec.from_dict(raw.get("tune", {}))


def _point(spec: TuneSpec, method: str, lr: float, seed: int) -> GridPoint:
    keys = {**METHOD_SETTINGS[method], **spec.overrides.get(method, {}),
            "optim.lr": lr, "run.seed": seed, "data.order_seed": seed}
    return GridPoint(f"{method}_lr-{lr:g}_seed-{seed}", tuple(keys.items()))


def grid_points(spec: TuneSpec) -> list[GridPoint]:
    """Every method × η_0 × grid seed, the most informative first (module docstring)."""
    grid = sorted(spec.lr_grid)
    middle = grid[len(grid) // 2]
    lrs = [middle] + [lr for lr in sorted(grid, reverse=True) if lr != middle]
    return [_point(spec, m, lr, s) for s in spec.grid_seeds for lr in lrs for m in spec.methods]


def confirm_points(spec: TuneSpec, chosen: dict[str, float]) -> list[GridPoint]:
    """The confirmation seeds at each method's chosen η_0."""
    return [_point(spec, m, chosen[m], s) for s in spec.confirm_seeds for m in spec.methods if m in chosen]


def _run_points(base: dict[str, Any], points: Sequence[GridPoint], out: Path, log: Callable[[str], None]) -> None:
    """Each point in turn; a run whose loss turns non-finite is marked ``DIVERGED`` and skipped
    from then on (``analyses.versus.tuning`` scores it +∞), so one unstable η_0 does not stop the grid."""
    from zerolock_theory.training.steps import NonFiniteLossError

    for point in points:
        marker = Path(out) / point.name / DIVERGED
        if marker.is_file():
            log(f"{point.name}: diverged earlier, skipped")
            continue
        try:
            run_grid(base, [point], out, log)
        except NonFiniteLossError as exc:
            marker.write_text(f"{exc}\n")
            log(f"{point.name}: diverged ({exc})")


def check_tune(raw: dict[str, Any]) -> list[tuple[str, Any]]:
    """Every grid run's ``TrainConfig``, named, checked before anything is written; a recipe without
    three splits raises a one-line ``ValueError``."""
    base, spec = split_recipe(raw)
    grid = grid_points(spec)
    configs = validate_grid(base, grid)
    if configs[0].data.test_fraction <= 0:
        raise ValueError("zerolock tune needs three splits: set data.test_fraction > 0 (e.g. 0.1)")
    return [(p.name, c) for p, c in zip(grid, configs, strict=True)]


def parse_shard(text: str) -> tuple[int, int]:
    """``"I/N"`` → ``(I, N)`` with 0 ≤ I < N; anything else raises ``ValueError``."""
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard takes I/N with integers, e.g. 0/2; got {text!r}") from None
    if not 0 <= index < count:
        raise ValueError(f"--shard I/N needs 0 <= I < N, got {text!r}")
    return index, count


def _settled(out: Path, point: GridPoint, steps: int) -> bool:
    run_dir = Path(out) / point.name
    return (run_dir / DIVERGED).is_file() or is_complete(run_dir, steps)


def _wait_for(out: Path, points: Sequence[GridPoint], steps: int, log: Callable[[str], None],
              poll_s: float) -> None:
    """Block until every point is complete or marked diverged (another shard is running it)."""
    waiting = [p.name for p in points if not _settled(out, p, steps)]
    if waiting:
        log(f"waiting for {len(waiting)} grid run(s) of other shards: {', '.join(waiting)}")
    while any(not _settled(out, p, steps) for p in points):
        time.sleep(poll_s)


def run_tune(raw: dict[str, Any], out: Path, log: Callable[[str], None] = print, *,
             phases: Sequence[str] = ("grid", "confirm"), shard: tuple[int, int] = (0, 1),
             poll_s: float = 30.0) -> dict[str, Any]:
    """Run the grid, select on validation, run the confirmation seeds; returns ``tune.json``'s content.

    With ``shard=(i, n)``, only this shard's share of each phase (module docstring).
    """
    base, spec = split_recipe(raw)
    grid = grid_points(spec)
    index, count = shard
    steps = check_tune(raw)[0][1].run.steps
    if "grid" in phases:
        _run_points(base, grid[index::count], out, log)
    if count > 1 and "confirm" in phases:
        if index >= len(spec.methods) * len(spec.confirm_seeds):
            log(f"shard {index}/{count}: no confirmation run falls to this shard; its grid share is done")
            return {"spec": asdict(spec), "chosen": {}, "selection": {}}
        _wait_for(out, grid, steps, log, poll_s)
    left = [p.name for p in grid if not _settled(out, p, steps)]
    if left:
        log(f"the grid has {len(left)} run(s) left; nothing selected yet")
        return {"spec": asdict(spec), "chosen": {}, "selection": {}}
    selection = select_all(load_tuned(out), spec.methods)
    chosen = {m: s.lr for m, s in selection.items()}
    summary = {"spec": asdict(spec), "chosen": chosen, "selection": {m: asdict(s) for m, s in selection.items()}}
    if "confirm" in phases and len(chosen) == len(spec.methods):
        log("chosen eta_0 (validation split): " + ", ".join(f"{m} {lr:g}" for m, lr in chosen.items()))
        _run_points(base, confirm_points(spec, chosen)[index::count], out, log)
    (Path(out) / "tune.json").write_text(json.dumps(summary, indent=2, default=str))
    return summary
