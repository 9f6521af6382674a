"""The main job: suite composition, output-directory safety, and --quick end to end (slow)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from tests.analyses.versus.test_factorial import _write_tune
from zerolock_theory.app.cli import main
from zerolock_theory.app.workflows import verify as verify_module
from zerolock_theory.app.workflows.suite_spec import FULL, QUICK, base_config, suite_points
from zerolock_theory.app.workflows.verify import choose_lr


def test_suite_has_every_required_run():
    for spec in (QUICK, FULL):
        names = [p.name for p in suite_points(spec, 0.1)]
        assert len(names) == len(set(names))
        for label in ("zerolock-forward", "zerolock-reverse", "backprop"):
            assert sum(n.startswith(label + "_") and "lr-0.1_" in n for n in names) == len(spec.seeds)
        assert sum(n.startswith("zerolock-forward-matched_") for n in names) == spec.matched_seeds
        lrs = {n.split("_")[1] for n in names if n.startswith("zerolock-forward_")}
        assert len(lrs) == 1 + len(spec.lr_factors)  # the sweep: η_0 × each factor (none in QUICK)
        for point in suite_points(spec, 0.1):  # a replicate's seed draws its init AND its data order
            over = dict(point.overrides)
            assert over["data.order_seed"] == over["run.seed"] and "data.seed" not in over
    assert len(FULL.seeds) >= 5 and len(QUICK.seeds) >= 3 and FULL.steps >= 1000 and not FULL.smoke
    assert QUICK.smoke and QUICK.steps < 500  # the bound test's minimum horizon


def test_pilot_picks_half_the_largest_lr_whose_held_out_ce_does_not_rise(tmp_path, monkeypatch):
    """Synthetic pilots: held-out CE rises for eta_0 > 0.1 (backprop) or > 0.2 (ZeroLock)."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1] / "analyses"))
    from synthetic_runs import write_run

    def fake_grid(base, points, out, log=print):
        (point,) = points
        lr = dict(point.overrides)["optim.lr"]
        method = dict(point.overrides)["method.name"]
        rises = lr > 0.1 if method == "backprop" else lr > 0.2
        return [write_run(out, point.name, method=method, lr=lr, steps=20, probes=False,
                          final_ce_drop=-3.0 if rises else 0.5)]

    monkeypatch.setattr(verify_module, "run_grid", fake_grid)
    spec = dataclasses.replace(FULL, lr_grid=(0.05, 0.4, 0.2, 0.1))
    base = base_config(spec, "embedded", "embedded", "cpu", "float32", None)
    lrs, table = choose_lr(spec, base, tmp_path)
    assert lrs == {"zerolock-forward": 0.1, "zerolock-reverse": 0.1, "backprop": 0.05}  # back-off 1/2
    assert [(r["method"], r["lr"], r["ok"]) for r in table] == [
        ("zerolock-forward", 0.4, False), ("zerolock-forward", 0.2, True), ("zerolock-forward", 0.1, True),
        ("zerolock-reverse", 0.4, False), ("zerolock-reverse", 0.2, True), ("zerolock-reverse", 0.1, True),
        ("backprop", 0.4, False), ("backprop", 0.2, False), ("backprop", 0.1, True), ("backprop", 0.05, True),
    ]
    assert table[2]["why"] == "chosen: 0.5 x largest stable 0.2"
    names = [p.name for p in suite_points(spec, lrs)]
    assert "backprop_lr-0.05_seed-4" in names and "zerolock-forward-matched_lr-0.1_seed-0" in names
    full = dataclasses.replace(spec, pilot_backoff=1.0)  # the plain "largest stable" rule
    assert choose_lr(full, base, tmp_path / "plain")[0] == {"zerolock-forward": 0.2, "zerolock-reverse": 0.2,
                                                               "backprop": 0.1}


def test_pilot_with_no_qualifying_lr_takes_the_smallest(tmp_path, monkeypatch):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1] / "analyses"))
    from synthetic_runs import write_run

    def rising(base, points, out, log=print):
        (point,) = points
        return [write_run(out, point.name, steps=20, probes=False, final_ce_drop=-3.0)]

    monkeypatch.setattr(verify_module, "run_grid", rising)
    spec = dataclasses.replace(QUICK, lr_grid=(0.1, 0.05))
    lrs, table = choose_lr(spec, base_config(spec, "embedded", "embedded", "cpu", "float32", None), tmp_path)
    assert set(lrs.values()) == {0.05} and table[-1]["why"] == "none qualified: smallest"


def test_pilot_judges_the_own_objective_not_held_out_ce(tmp_path, monkeypatch):
    """Reverse-like pilots: task CE rises at every eta_0, the local losses fall below 0.1: stable there."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).parents[1] / "analyses"))
    from synthetic_runs import write_run

    def fake_grid(base, points, out, log=print):
        (point,) = points
        lr = dict(point.overrides)["optim.lr"]
        run = write_run(out, point.name, lr=lr, steps=20, probes=False, final_ce_drop=-3.0)
        records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
        for t, record in enumerate(records):
            record["chunk/1/loss"] = 2.0 + (0.05 if lr > 0.1 else -0.05) * t
        (run / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
        return [run]

    monkeypatch.setattr(verify_module, "run_grid", fake_grid)
    spec = dataclasses.replace(QUICK, lr_grid=(0.4, 0.1))
    lrs, table = choose_lr(spec, base_config(spec, "embedded", "embedded", "cpu", "float32", None), tmp_path)
    assert set(lrs.values()) == {0.05}
    first, second = table[0], table[1]
    assert (first["lr"], first["ok"], second["lr"], second["ok"]) == (0.4, False, 0.1, True)
    assert second["eval_ce_end"] > second["eval_ce_start"]  # held-out CE rose: recorded, not judged
    assert "own objective (sum of chunk/k/loss)" in second["why"] and "held-out CE" in second["why"]


def test_reanalyze_needs_a_verify_directory_and_with_needs_reanalyze(tmp_path, capsys):
    (tmp_path / "mine.txt").write_text("data")
    assert main(["verify", "--reanalyze", "--out", str(tmp_path)]) == 2
    assert "not a zerolock verify directory" in capsys.readouterr().err
    assert main(["verify", "--quick", "--with", str(tmp_path), "--out", str(tmp_path / "v")]) == 2
    assert "--with belongs to --reanalyze" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.txt"]


def test_verify_refuses_foreign_non_empty_out(tmp_path, capsys):
    (tmp_path / "mine.txt").write_text("data")
    assert main(["verify", "--quick", "--out", str(tmp_path)]) == 2
    assert "not a verify directory" in capsys.readouterr().err
    assert (tmp_path / "mine.txt").read_text() == "data"


# verify --quick at a size that still runs every part: the pilot, 3 groups x 3 seeds with every probe,
# Lemma 2's fixed point, the memory runs, the analysis and the report
TINY = ["--set", "suite.steps=8", "--set", "suite.pilot_steps=5", "--set", "suite.lr_grid=[0.1]",
        "--set", "suite.probe_positions=16", "--set", "suite.fixed_point_steps=40",
        "--set", "suite.memory_repeats=1"]
# the rows whose outcome a run of any size fixes: model-free algebra, the horizon, the absent tune
FIXED = {"lemma2_stated": ("holds (exact)", "computed"), "lemma2_implemented": ("no: m_k", "computed"),
         "proposition1": ("holds as an identity; as transcribed, false", "algebra"),
         "theorem1_rate_reverse": ("not testable", "short_horizon"),
         "theorem1_rate_forward": ("not testable", "short_horizon"),
         "versus_backprop": ("not tuned", "not_tuned"),
         "systems_throughput": ("a prediction, not a verdict", "prediction")}


def _rows(out) -> dict[str, tuple[str, str]]:
    analysis = json.loads((out / "analysis" / "analysis.json").read_text())
    return {row["claim"]: (row["outcome"], row["evidence"]["reason"]) for row in analysis["claims"]}


@pytest.mark.slow
def test_verify_quick_end_to_end(tmp_path, capsys):
    from analyses.registry import claims

    out = tmp_path / "verify"
    assert main(["verify", "--quick", *TINY, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    rows = _rows(out)
    assert list(rows) == [c.key for c in claims()]  # every row, in table order
    for key, expected in FIXED.items():
        assert rows[key] == expected, key
    ran = {key: outcome for key, (outcome, _) in rows.items() if key not in FIXED}
    assert "not measured" not in ran.values(), ran  # every analysis had its data: probes, fixed point, memory
    for c in claims():
        assert rows[c.key][0] in c.outcomes
    html = (out / "report" / "report.html").read_text()
    assert all(f'id="claim-{c.key}"' in html for c in claims())
    pngs = list((out / "report").rglob("*.png"))
    assert pngs and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 2000 for p in pngs)
    # --reanalyze trains nothing and gives the same verdicts from the same runs
    trained = sorted((p.name, p.stat().st_mtime_ns) for p in (out / "runs").rglob("metrics.jsonl"))
    report = (out / "report" / "report.md").read_text()
    page = tmp_path / "results" / "quick.md"
    assert main(["verify", "--reanalyze", "--out", str(out), "--publish", str(page)]) == 0
    assert (out / "report" / "report.md").read_text() == report  # the whole page, runs in the same order
    published = page.read_text()  # the verdict table as a generated page, with the suite's wall time
    assert published.startswith("<!-- generated by zerolock verify --publish") and "- commit: `" in published
    assert "wall time of the suite (the invocation that finished it): not recorded" not in published
    assert all(f"| {c.title} |" in published for c in claims())
    assert str(tmp_path) not in published and f"- full report: `{out.name}/report/report.html`" in published
    again = capsys.readouterr().out
    assert printed.split("claim", 1)[1].split("report:")[0] == again.split("claim", 1)[1].split("report:")[0]
    assert _rows(out) == rows
    assert sorted((p.name, p.stat().st_mtime_ns) for p in (out / "runs").rglob("metrics.jsonl")) == trained
    other = tmp_path / "tune" / "backprop_lr-0.1_seed-0"  # a tune directory of another model is refused
    other.mkdir(parents=True)
    (other / "config.json").write_text(json.dumps({"model": {"path": "smollm2-135m"}}))
    assert main(["verify", "--reanalyze", "--out", str(out), "--with", str(tmp_path / "tune")]) == 2
    assert "its runs train model 'smollm2-135m'" in capsys.readouterr().err
    factorial = tmp_path / "factorial"  # another input is named in the published command
    _write_tune(factorial / "plain", "embedded_plain", {0: 5.4, 1: 5.41})
    assert main(["verify", "--reanalyze", "--out", str(out), "--with", str(factorial), "--publish", str(page)]) == 0
    assert "--reanalyze --with factorial --publish quick.md`" in page.read_text()
