"""``zerolock analyze``: both forms, and one-line errors with exit status 2."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from synthetic_runs import power_law_series, write_run

import zerolock_theory.app.cli as cli
from analyses.theorem1.families import drift_table, rate_series
from analyses.theorem1.rate import RATE_OUTCOMES

REGISTERED = cli.COMMANDS  # read before the fixture narrows it


@pytest.fixture(autouse=True)
def _only_our_commands(monkeypatch):
    # Other sub-commands are developed in parallel; keep these tests independent of them.
    monkeypatch.setattr(cli, "COMMANDS", ("analyze", "report"))


def _fail(capsys, argv, message):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("zerolock analyze: error:") and message in err


def test_commands_are_registered():
    assert {"analyze", "report"} <= set(REGISTERED)


def test_run_form_writes_the_analysis(tmp_path, capsys):
    runs = [write_run(tmp_path, f"r{i}", lr=lr, steps=60) for i, lr in enumerate([1e-3, 1e-2])]
    out = tmp_path / "out"
    assert cli.main(["analyze", *map(str, runs), "--out", str(out), "--n-boot", "50"]) == 0
    assert (out / "analysis.json").is_file() and (out / "convergence_forward.json").is_file()
    assert "Theorem 1 (a): the rate of R-bar" in capsys.readouterr().out
    _fail(capsys, ["analyze", str(runs[0]), "--out", str(out)], "not empty")
    assert (
        cli.main(["analyze", str(runs[0]), "--out", str(out), "--overwrite", "--n-boot", "20"]) == 0
    )


@pytest.fixture()
def table(tmp_path):
    g = power_law_series(np.random.default_rng(0), 300, 0.5)
    path = tmp_path / "g.csv"
    pd.DataFrame({"it": range(300), "gsq": g}).to_csv(path, index=False)
    return path


def test_rate_form_text(table, capsys):
    assert cli.main(["analyze", "rate", "--table", str(table), "--column", "gsq", "--step-column", "it"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1, lines  # the rate description alone: no test of a bound with an unknown constant
    rate_line = lines[0]
    assert "not testable at this horizon" in rate_line and "horizon T = 300" in rate_line
    assert "beta = undefined" in rate_line and "1 seed(s)" in rate_line  # below the minimum horizon: no figures


def _rate_json(capsys, path, column) -> dict:
    args = ["analyze", "rate", "--table", str(path), "--column", column, "--seed-column", "seed", "--json"]
    assert cli.main(args) == 0
    return json.loads(capsys.readouterr().out)


def test_rate_form_json_verdicts_on_generated_tables(tmp_path, capsys):
    """The three tables of issue 9: logistic control, Ā_T ~ T^-0.2, and 60 steps. The JSON carries
    the rate description only: no refutation word for a bound with an unknown constant."""
    from analyses.theorem1.controls import LogisticToy, logistic_table

    control = tmp_path / "control.csv"
    logistic_table(2000, [0, 1, 2], LogisticToy(batch=256)).to_csv(control, index=False)
    data = _rate_json(capsys, control, "grad_sq_unbiased")
    assert set(data) == {"rate"} and "not consistent" not in json.dumps(data)
    assert data["rate"]["horizon"] == 2000 and data["rate"]["seeds"] == 3
    assert set(data["rate"]["beta"]) >= {"estimate", "low", "high"}
    assert set(data["rate"]) >= {"outcome", "beta", "b", "late_excess", "floor_from", "horizon", "seeds"}
    assert data["rate"]["outcome"] in RATE_OUTCOMES and data["rate"]["seeds"] == 3

    slow = tmp_path / "slow.csv"
    t = np.arange(1, 2001, dtype=float)
    mean = 2.0 * (t**0.8 - (t - 1) ** 0.8)  # running mean 2·T^-0.2
    rows = [pd.DataFrame({"step": t - 1, "g": mean * (1 + 0.3 * np.random.default_rng(s).standard_normal(t.size)),
                          "seed": s}) for s in range(3)]
    pd.concat(rows).to_csv(slow, index=False)
    data = _rate_json(capsys, slow, "g")
    assert set(data) == {"rate"} and data["rate"]["outcome"] in RATE_OUTCOMES

    short = tmp_path / "short.csv"
    pd.concat([r[r["step"] < 60] for r in rows]).to_csv(short, index=False)
    data = _rate_json(capsys, short, "g")
    assert data["rate"]["outcome"] == "not testable" and data["rate"]["horizon"] == 60


def test_rate_form_errors(table, tmp_path, capsys):
    base = ["analyze", "rate", "--table", str(table)]
    _fail(capsys, base, "needs --table FILE and --column NAME")
    _fail(capsys, [*base, "--column", "nope", "--step-column", "it"], "missing column 'nope'")
    _fail(capsys, [*base, "--column", "gsq"], "missing column 'step'")
    _fail(
        capsys,
        ["analyze", "rate", "extra", "--table", str(table), "--column", "gsq"],
        "no run directories",
    )
    _fail(
        capsys,
        ["analyze", "rate", "--table", str(tmp_path / "x.csv"), "--column", "g"],
        "no such file",
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"step": 0, "g": 1}\n{"step": 1,\n{"step": 2, "g": 1}\n')
    _fail(capsys, ["analyze", "rate", "--table", str(bad), "--column", "g"], "line 2: invalid JSON")
    _fail(capsys, [*base, "--column", "gsq", "--n-boot", "0"], "--n-boot")
    _fail(capsys, [*base, "--column", "gsq", "--step-column", "it", "--seed-column", "s"], "missing seed column 's'")
    _fail(capsys, [*base, "--column", "gsq", "--step-column", "it", "--min-horizon", "0"], "--min-horizon")


def test_run_form_errors(tmp_path, capsys):
    run = write_run(tmp_path, "r", steps=30)
    _fail(capsys, ["analyze", str(run)], "needs --out")
    _fail(
        capsys,
        ["analyze", str(tmp_path / "none"), "--out", str(tmp_path / "o")],
        "no such run directory",
    )
    (run / "metrics.jsonl").write_text('{"step": 0}\n{bad\n{"step": 2}\n')
    _fail(capsys, ["analyze", str(run), "--out", str(tmp_path / "o")], "line 2")
    _fail(capsys, ["analyze", str(run), "--column", "x", "--out", str(tmp_path / "o")], "rate form")
    assert not (tmp_path / "o").exists()  # nothing created on failure


def test_help_documents_both_forms(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["analyze", "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert (
        "zerolock analyze RUN_DIR" in text
        and "zerolock analyze rate --table FILE --column NAME" in text
    )


@pytest.mark.parametrize(("key", "value"), [("model", "/models/other-lm"), ("data", "/corpora/other.txt")])
def test_runs_of_different_models_or_data_exit_2_naming_the_difference(tmp_path, capsys, key, value):
    a, b = write_run(tmp_path, "a", steps=20), write_run(tmp_path, "b", steps=20)
    config = json.loads((b / "config.json").read_text())
    config[key]["path" if key == "model" else "source"] = value
    (b / "config.json").write_text(json.dumps(config))
    field = "model.path" if key == "model" else "data.source"
    for command in ("analyze", "report"):
        out = tmp_path / f"o_{command}"
        assert cli.main([command, str(a), str(b), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"runs differ in {field}" in err and value in err
        assert not (out / "analysis.json").exists()


def _family_table(path, family, seeds, steps, rng):
    parts = []
    for s in range(seeds):
        t, g = rate_series(family, steps, rng, 0.5)
        parts.append(pd.DataFrame({"step": t - 1, "g": g, "seed": s}))
    pd.concat(parts).to_parquet(path) if path.suffix == ".parquet" else pd.concat(parts).to_csv(path, index=False)
    return path


def test_rate_json_on_the_bound_and_on_a_plateau(tmp_path, capsys):
    """Issue 23, on the rule of issue 38: the bound's own level with noise, 3 seeds, 2000 steps, never
    "no decay"; a plateau: "no decay"."""
    rng = np.random.default_rng(4)
    bound = _rate_json(capsys, _family_table(tmp_path / "b.csv", "log(T+1)/sqrt(T) (the bound)", 3, 2000, rng),
                       "g")["rate"]
    assert bound["outcome"] != "no decay" and bound["horizon"] == 2000 and bound["seeds"] == 3
    assert bound["beta"]["low"] <= bound["beta"]["estimate"] <= bound["beta"]["high"]
    flat = _rate_json(capsys, _family_table(tmp_path / "p.csv", "plateau", 3, 2000, rng), "g")["rate"]
    assert flat["outcome"] == "no decay" and flat["b"]["low"] > 0
    args = ["analyze", "rate", "--table", str(tmp_path / "p.csv"), "--column", "g", "--json", "--window", "0.8"]
    assert cli.main([*args, "--seed-column", "seed"]) == 0
    assert json.loads(capsys.readouterr().out)["rate"]["window"] == pytest.approx(0.8)
    _fail(capsys, [*args, "--window", "1.5"], "--window must lie in (0, 1)")


def test_drift_form(tmp_path, capsys):
    rng = np.random.default_rng(5)
    path = tmp_path / "d.jsonl"
    drift_table("first order (a·eta_t)", 1000, 5, rng).to_json(path, orient="records", lines=True)
    args = ["analyze", "drift", "--table", str(path), "--column", "drift", "--lr-column", "lr"]
    assert cli.main([*args, "--seed-column", "seed", "--descent-column", "descent", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["drift"]
    assert data["outcome"] == "outgrows" and data["seeds"] == 5 and data["horizon"] == 1000
    assert data["first_order"]["low"] > data["threshold"] and data["share"]["estimate"] > 0
    assert cli.main([*args, "--seed-column", "seed"]) == 0
    out = capsys.readouterr().out
    assert "outgrows" in out and "not the drift's order in the step" in out and "fails" not in out
    _fail(capsys, args, "duplicated steps")  # five seeds read as one series
    _fail(capsys, args[:-2], "needs --lr-column")
    _fail(capsys, [*args, "--window", "0.5"], "--window belongs to the rate form")
    _fail(capsys, [*args[:-1], "drift", "--seed-column", "seed"], "must be positive")
