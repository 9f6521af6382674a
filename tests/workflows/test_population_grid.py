"""``run_grid(..., population=True)``: a group's unfinished seeds train as one population, a
finished member is skipped, and each member's directory equals its separate run (to 1e-5).

One primary group of a tiny suite (ZeroLock forward, 4 steps, seeds 0, 1, 2, the suite's probes
at its cadences): seed 0 is trained first on its own, then the grid runs all three seeds with
populations on; it must skip seed 0, train seeds 1 and 2 as a population of two, and leave
member directories that equal separate runs and that the analysis reads with the same outcomes.
"""

from __future__ import annotations

import dataclasses
import math

from zerolock_theory.app.workflows.suite_spec import QUICK, base_config, suite_points
from zerolock_theory.app.workflows.sweep import run_grid
from zerolock_theory.jsonio import read_records

SPEC = dataclasses.replace(QUICK, steps=4, seeds=(0, 1, 2), lr=0.1, probe_positions=16, scaled_steps=2,
                           readout_records=2, eval_every=2, proof_every=2, global_every=2)
TIMING = ("time", "per_s", "seconds")


def _points():
    return [p for p in suite_points(SPEC) if p.name.startswith("zerolock-forward_")]


def _same(a: dict, b: dict) -> list[str]:
    bad = []
    for key in set(a) | set(b):
        if any(t in key for t in TIMING):
            continue
        x, y = a.get(key), b.get(key)
        if isinstance(x, float) and isinstance(y, float):
            if not (math.isnan(x) and math.isnan(y)) and abs(x - y) > 1e-5 * max(abs(x), abs(y), 1e-8):
                bad.append(key)
        elif x != y:
            bad.append(key)
    return bad


def test_population_grid_skips_finished_members_and_equals_separate_runs(tmp_path):
    from analyses.suite import analyze_runs

    base = base_config(SPEC, "embedded", "embedded", "cpu", "float32", None)
    points = _points()
    assert len(points) == 3
    separate = run_grid(base, points, tmp_path / "separate", log=lambda *_: None)
    log: list[str] = []
    run_grid(base, points[:1], tmp_path / "population", log=lambda *_: None)  # seed 0 finished first
    finished = (tmp_path / "population" / points[0].name / "metrics.jsonl").stat().st_mtime_ns
    members = run_grid(base, points, tmp_path / "population", log=log.append, population=True)
    assert f"[1/3] {points[0].name}: complete, skipped" in log
    assert f"one population of 2 seeds (one forward for all): {points[1].name}, {points[2].name}" in log
    assert (tmp_path / "population" / points[0].name / "metrics.jsonl").stat().st_mtime_ns == finished
    for one, other in zip(members, separate, strict=True):
        a, b = read_records(one / "metrics.jsonl"), read_records(other / "metrics.jsonl")
        assert [r["step"] for r in a] == [r["step"] for r in b] == list(range(SPEC.steps))
        for x, y in zip(a, b, strict=True):
            assert not _same(x, y), (one.name, x["step"], _same(x, y))
    outcomes = [{v.claim: v.outcome for v in analyze_runs(dirs).claims} for dirs in (members, separate)]
    assert outcomes[0] == outcomes[1]


def test_runs_that_differ_beyond_their_seeds_train_separately(tmp_path):
    from zerolock_theory.app.workflows.launch import PointTask, PopulationTask
    from zerolock_theory.app.workflows.sweep import populations, validate_grid

    base = base_config(SPEC, "embedded", "embedded", "cpu", "float32", None)
    points = [p for p in suite_points(SPEC) if not p.name.startswith("zerolock-forward-matched")]
    tasks = [PointTask(p.name, c.to_dict(), tmp_path / p.name, False)
             for p, c in zip(points, validate_grid(base, points), strict=True)]
    grouped, lines = populations(tasks)
    assert [type(t) for t in grouped] == [PopulationTask] * 3
    assert [[m.name.split("_")[0] for m in t.members] for t in grouped] == [
        ["zerolock-forward"] * 3, ["zerolock-reverse"] * 3, ["backprop"] * 3]
    no_lora = [dataclasses.replace(t, raw={**t.raw, "model": {**t.raw["model"], "lora": {
        **t.raw["model"]["lora"], "enabled": False}}}) for t in tasks[:2]]
    grouped, lines = populations(no_lora)
    assert grouped == no_lora and lines[0].startswith("separate runs (a population trains LoRA adapters")
