"""The sensitivity suite (``suite.variants``): the packaged recipe, the settings and their runs, bad
variants refused in one line before anything is written, the map saved with the report. The
workflow test replaces training and analysis by recorders; the slow test trains tiny runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import analyses.suite as suite_module
import reports.page as page_module
from analyses.registry import claims
from analyses.results import load_result
from analyses.sensitivity import SENSITIVITY as SENSITIVITY_RESULT
from analyses.sensitivity import SHORT_HORIZON_ROWS, SensitivityMap
from analyses.suite_result import SuiteAnalysis
from analyses.verdict import Evidence, Verdict
from zerolock_theory.app.cli import main
from zerolock_theory.app.workflows import sensitivity as sensitivity_module
from zerolock_theory.app.workflows.sensitivity import (
    SENSITIVITY,
    SENSITIVITY_TABLES,
    plan_settings,
    settings_of,
    verify_sensitivity,
)
from zerolock_theory.app.workflows.verify_config import load_suite

TINY = dict(steps=6, scaled_steps=6, eval_every=6, probe_positions=16, readout_records=3)


def test_packaged_recipe_equals_the_preset_and_has_eight_settings():
    assert load_suite("verify_sensitivity") == (SENSITIVITY, SENSITIVITY_TABLES)
    names = [s.name for s in settings_of(SENSITIVITY)]
    assert names == ["default", "alpha-0.1", "alpha-0.9", "epsilon_reverse-0.01", "epsilon_reverse-0.3",
                     "chunks-2", "chunks-8", "p0-uniform"]
    assert len(SENSITIVITY.seeds) >= 3 and SENSITIVITY.scaled_steps >= 30  # the share needs 30 per seed


def test_each_setting_changes_one_thing_and_an_epsilon_variant_only_the_reverse_runs():
    plan = plan_settings(SENSITIVITY, "embedded", "embedded", "cpu", "float32", None, SENSITIVITY_TABLES)
    configs = {setting.name: [json.loads(c) for c in found] for setting, _, _, found in plan}
    default = configs["default"]
    assert [c["method"]["direction"] for c in default] == ["forward"] * 3 + ["reverse"] * 3
    assert {c["optim"]["lr"] for cs in configs.values() for c in cs} == {0.025}  # one fixed eta_0, no pilot
    expect = {"alpha-0.1": ("method", "alpha", 0.1), "alpha-0.9": ("method", "alpha", 0.9),
              "chunks-2": ("model", "chunks", 2), "chunks-8": ("model", "chunks", 8),
              "p0-uniform": ("method", "p0", "uniform")}
    for name, (section, key, value) in expect.items():
        for mine, base in zip(configs[name], default, strict=True):
            assert mine[section][key] == value and base[section][key] != value
            assert {**mine, section: {**mine[section], key: base[section][key]}} == base  # nothing else differs
    for eps in (0.01, 0.3):
        mine = configs[f"epsilon_reverse-{eps}"]
        assert mine[:3] == default[:3]  # forward runs: the default's, not trained again
        assert [c["method"]["epsilon"] for c in mine[3:]] == [eps] * 3


BAD = {
    "method.alhpa=0.1": "unknown key",
    "method.p0=gaussian": "method.p0",
    "method.alpha=1.5": "must lie in [0, 1]",
    "alpha=0.1": "must look like section.key=value",
    "method.epsilon=0.2": "set by the suite per run",
    "suite.steps=10": "a variant may change",
    "suite.epsilon_reverse=1.5": "epsilon must lie in [0, 1)",
    "suite.epsilon_reverse=abc": "suite.epsilon_reverse",
}


@pytest.mark.parametrize("variant", list(BAD))
def test_a_bad_variant_is_one_line_exit_2_and_nothing_written(variant, tmp_path: Path, capsys):
    out = tmp_path / "v"
    argv = ["verify", "--config", "verify_sensitivity", "--set", f"suite.variants={json.dumps([variant])}",
            "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and BAD[variant] in err and "Traceback" not in err
    assert not out.exists()


def test_variants_without_a_fixed_eta_0_are_refused(tmp_path: Path, capsys):
    argv = ["verify", "--config", "verify_sensitivity", "--set", "suite.lr=null", "--out", str(tmp_path / "v")]
    assert main(argv) == 2
    assert "needs a fixed eta_0" in capsys.readouterr().err and not (tmp_path / "v").exists()


def test_the_workflow_runs_each_setting_shares_the_default_forward_runs_and_saves_the_map(tmp_path, monkeypatch):
    spec = SENSITIVITY.__class__(**{**SENSITIVITY.__dict__, **TINY,
                                    "variants": ("suite.epsilon_reverse=0.3", "model.chunks=2")})
    trained: dict[str, list[str]] = {}

    def fake_run_points(base, points, out, jobs=1, log=print, population=True):
        trained[out.parent.name] = [p.name for p in points]
        dirs = [out / p.name for p in points]
        for d in dirs:
            d.mkdir(parents=True)
        return dirs

    analysed: dict[str, list[Path]] = {}

    def fake_analyze(run_dirs):
        setting = run_dirs[-1].parents[1].name
        analysed[setting] = list(run_dirs)
        flip = "close" if setting == "chunks-2" else "far apart"
        verdicts = [Verdict(c.key, flip if c.key == "lemma2_mismatch" else "not measured", Evidence("x"))
                    for c in claims()]
        return SuiteAnalysis([], {}, verdicts, {}, {})

    reported = {}
    monkeypatch.setattr(sensitivity_module, "run_points", fake_run_points)
    monkeypatch.setattr(suite_module, "analyze_runs", fake_analyze)
    monkeypatch.setattr(page_module, "write_report",
                        lambda suite, out: reported.setdefault("suite", suite) and page_module.ReportFiles(out, out, {}))
    monkeypatch.setattr("reports.scope.scope_line", lambda suite: "scope")
    result = verify_sensitivity(spec, tmp_path / "v", device="cpu", tables=SENSITIVITY_TABLES, log=lambda _: None)
    forward = [f"zerolock-forward_lr-0.025_seed-{s}" for s in spec.seeds]
    reverse = [f"zerolock-reverse_lr-0.025_seed-{s}" for s in spec.seeds]
    assert trained == {"default": forward + reverse, "epsilon_reverse-0.3": reverse, "chunks-2": forward + reverse}
    root = tmp_path / "v" / "settings"
    assert analysed["epsilon_reverse-0.3"] == [root / "default" / "runs" / n for n in forward] + [
        root / "epsilon_reverse-0.3" / "runs" / n for n in reverse]
    assert len(result.run_dirs) == 15  # 6 + 3 + 6 distinct runs
    found = load_result(tmp_path / "v" / "analysis" / "sensitivity.json")
    assert isinstance(found, SensitivityMap) and found.sensitive == ("lemma2_mismatch",)
    assert found.claims == SHORT_HORIZON_ROWS and len(found.cells) == len(SHORT_HORIZON_ROWS) * 3
    assert found.outcomes_of("lemma2_mismatch") == {"default": "far apart", "epsilon_reverse-0.3": "far apart",
                                                    "chunks-2": "close"}
    assert reported["suite"].get(SENSITIVITY_RESULT) == found and "no pilot" in reported["suite"].settings["suite"]
    assert json.loads((tmp_path / "v" / "verify.json").read_text())["settings"] == [
        "default", "suite.epsilon_reverse=0.3", "model.chunks=2"]


@pytest.mark.slow
def test_tiny_suite_end_to_end_then_resume_skips_every_finished_run(tmp_path: Path):
    spec = SENSITIVITY.__class__(**{**SENSITIVITY.__dict__, **TINY, "seeds": (0,),
                                    "variants": ("suite.epsilon_reverse=0.3",)})
    lines: list[str] = []
    first = verify_sensitivity(spec, tmp_path / "v", device="cpu", tables=SENSITIVITY_TABLES, jobs=1, log=lines.append)
    assert len(first.run_dirs) == 3 and sum("starting" in line for line in lines) == 3
    stamps = {d: (d / "metrics.jsonl").stat().st_mtime_ns for d in first.run_dirs}
    found = load_result(first.analysis_dir / "sensitivity.json")
    assert found.claims == SHORT_HORIZON_ROWS and len(found.cells) == len(SHORT_HORIZON_ROWS) * 2
    assert "Sensitivity map" in first.report_html.read_text(encoding="utf-8")
    lines.clear()
    again = verify_sensitivity(spec, tmp_path / "v", device="cpu", tables=SENSITIVITY_TABLES, jobs=1, log=lines.append)
    assert sum("complete, skipped" in line for line in lines) == 3 and not any("starting" in line for line in lines)
    assert {d: (d / "metrics.jsonl").stat().st_mtime_ns for d in again.run_dirs} == stamps
    assert load_result(again.analysis_dir / "sensitivity.json") == found


def test_plain_verify_refuses_variants_in_one_line(tmp_path: Path):
    from zerolock_theory.app.workflows.verify import verify

    with pytest.raises(ValueError, match="verify_sensitivity"):
        verify(SENSITIVITY, tmp_path / "v", device="cpu")
    assert not (tmp_path / "v").exists()
