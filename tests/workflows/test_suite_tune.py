"""The full suite's tuned comparison: its tune recipe at the suite's sizes, checked before anything is
written, run into tuned/, and read again by --reanalyze."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from analyses.results import load_result
from analyses.suite import analyze_runs
from analyses.versus.tuned_versus import TUNED
from reports.page import write_report
from zerolock_theory.app.cli import main
from zerolock_theory.app.workflows import verify as verify_module
from zerolock_theory.app.workflows.side_runs import SUITE_TUNE_KEYS, tune_recipe, tuned_runs
from zerolock_theory.app.workflows.suite_spec import FULL, QUICK, suite_base
from zerolock_theory.app.workflows.tune import check_tune
from zerolock_theory.app.workflows.verify_config import load_suite
from zerolock_theory.config import read_recipe


def test_the_full_suite_tunes_and_its_tune_takes_the_suites_sizes() -> None:
    spec, tables = load_suite("verify_full")
    assert spec.tune == "tune_embedded" and spec == FULL
    small = dataclasses.replace(spec, chunks=2, steps=40, seq_len=16, batch_size=4, alpha=0.25)
    base = suite_base(small, "embedded", "embedded", "cpu", "float64", None, tables)
    raw = tune_recipe(small, base)
    for table, key in SUITE_TUNE_KEYS:
        if key in base[table]:
            assert raw[table][key] == base[table][key], (table, key)
    assert (raw["model"]["chunks"], raw["run"]["steps"], raw["data"]["seq_len"]) == (2, 40, 16)
    recipe_tune = read_recipe("tune_embedded")["tune"]
    assert {k: v for k, v in raw["tune"].items() if k != "zerolock-reverse"} == recipe_tune  # the grid is the recipe's
    assert raw["tune"]["zerolock-reverse"]["method"]["epsilon"] == small.epsilon_reverse  # ε is the suite's
    assert raw["data"]["test_fraction"] > 0  # three splits: the recipe's, not the suite's two
    configs = check_tune(raw)
    assert len(configs) == 3 * len(raw["tune"]["lr_grid"]) * len(raw["tune"]["grid_seeds"])
    assert all(c.model.chunks == 2 and c.model.dtype == "float64" for _, c in configs)


def test_a_suite_tune_that_is_not_a_tune_recipe_is_refused_before_any_write(tmp_path: Path, capsys) -> None:
    out = tmp_path / "v"
    assert main(["verify", "--quick", "--set", "suite.tune=verify_quick", "--out", str(out)]) == 2
    assert "not a tune recipe" in capsys.readouterr().err
    assert not out.exists()
    two_way = tmp_path / "two_way.toml"  # a tune recipe without a test split
    two_way.write_text("[tune]\nlr_grid = [0.1, 0.05, 0.025]\n[data]\ntest_fraction = 0.0\n")
    assert main(["verify", "--quick", "--set", f"suite.tune={two_way}", "--out", str(out)]) == 2
    assert "three splits" in capsys.readouterr().err
    assert not out.exists()


def test_a_suite_without_tune_runs_none() -> None:
    assert QUICK.tune is None
    assert tuned_runs(QUICK, {}, Path("unused")) is None


def test_reanalyze_reads_the_suites_tuned_directory(tmp_path: Path, monkeypatch) -> None:
    out = tmp_path / "v"
    run = out / "runs" / "zerolock-forward_seed-0"
    run.mkdir(parents=True)
    (run / "metrics.jsonl").write_text("{}\n")
    (out / "verify.json").write_text(json.dumps({"spec": dataclasses.asdict(QUICK), "base": {}, "lr": {}, "pilot": []}))
    (out / "tuned").mkdir()
    (out / "tuned" / "tune.json").write_text("{}")
    seen = {}
    monkeypatch.setattr(verify_module, "_analyse_and_report",
                        lambda out, runs, inputs, *rest: seen.setdefault("inputs", inputs))
    verify_module.reanalyze(out, log=lambda _line: None)
    assert out / "tuned" in seen["inputs"] and run in seen["inputs"]


@pytest.mark.slow
def test_tuned_runs_run_the_tune_at_the_suites_sizes_and_resume(tmp_path: Path) -> None:
    recipe = tmp_path / "tiny_tune.toml"
    recipe.write_text('[tune]\nlr_grid = [0.1, 0.025, 0.00625]\n'
                      '[data]\neval_fraction = 0.1\ntest_fraction = 0.1\neval_batches = 1\n'
                      '[run]\neval_every = 1\ncheckpoint_every = 2\nprogress = false\nthreads = 1\n')
    spec = dataclasses.replace(QUICK, steps=2, seq_len=16, batch_size=2, chunks=2, tune=str(recipe))
    base = suite_base(spec, "embedded", "embedded", "cpu", "float32", None)
    lines: list[str] = []
    where = tuned_runs(spec, base, tmp_path / "tuned", log=lines.append)
    summary = json.loads((where / "tune.json").read_text())
    assert set(summary["chosen"]) == {"zerolock-forward", "zerolock-reverse", "backprop"}
    runs = sorted(p for p in where.iterdir() if (p / "metrics.jsonl").is_file())
    assert len(runs) == 3 * 3 * 2 + 3
    config = json.loads((runs[0] / "config.json").read_text())
    assert (config["model"]["chunks"], config["run"]["steps"], config["data"]["seq_len"]) == (2, 2, 16)
    stamps = {p: (p / "metrics.jsonl").stat().st_mtime_ns for p in runs}
    tuned_runs(spec, base, tmp_path / "tuned", log=lines.append)  # resumed: every run skipped
    assert {p: (p / "metrics.jsonl").stat().st_mtime_ns for p in runs} == stamps
    # the report shows the comparison: its curves travel in the analysis and draw both figures
    suite = analyze_runs([runs[0], where], n_boot=20)  # a run directory beside the tune directory
    tuned = suite.get(TUNED)
    assert tuned.curves and {"method", "seed", "steps", "test_ce", "chunk_1", "chunk_2"} <= set(tuned.curves[0])
    assert load_result(tuned.to_json()) == tuned
    files = write_report(suite, tmp_path / "report")
    assert {"versus", "tuned_chunks"} <= set(files.figures)
    assert "each method at its own best eta_0" in files.html.read_text(encoding="utf-8")
