"""analyses.io: loading run directories and tables, with clear errors."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from synthetic_runs import write_run

from analyses.io import RunDataError, RunDataWarning, load_run, numeric_column, read_table


@pytest.fixture()
def run_dir(tmp_path):
    return write_run(tmp_path, "run", steps=20)


def test_load_run_reads_config_manifest_and_metrics(run_dir):
    run = load_run(run_dir)
    assert run.get("optim.lr") == 1e-3
    assert run.get("model.chunks") == 3
    assert run.get("missing.key", "dflt") == "dflt"
    assert run.manifest["git_commit"] == "abc1234"
    assert list(run.metrics["step"]) == list(range(20))
    assert run.metrics["probe/gradient/global_sq"].isna().sum() == 16  # null → NaN
    assert run.warnings == ()


def test_missing_directory_and_files(tmp_path, run_dir):
    with pytest.raises(RunDataError, match="no such run directory"):
        load_run(tmp_path / "nope")
    (run_dir / "metrics.jsonl").unlink()
    with pytest.raises(RunDataError, match="missing metrics.jsonl"):
        load_run(run_dir)


def test_missing_config(run_dir):
    (run_dir / "config.json").unlink()
    with pytest.raises(RunDataError, match="missing config"):
        load_run(run_dir)


def _rewrite(run_dir, fn):
    path = run_dir / "metrics.jsonl"
    lines = path.read_text().splitlines()
    path.write_text(fn(lines))


def test_corrupt_middle_line_names_the_line(run_dir):
    _rewrite(run_dir, lambda ls: "\n".join(ls[:2] + ['{"step": 2, "x": '] + ls[3:]) + "\n")
    with pytest.raises(RunDataError, match=r"line 3: invalid JSON"):
        load_run(run_dir)


def test_torn_last_line_is_dropped_with_a_warning(run_dir):
    _rewrite(run_dir, lambda ls: "\n".join(ls[:-1]) + "\n" + ls[-1][: len(ls[-1]) // 2])
    with pytest.warns(RunDataWarning, match="torn last line"):
        run = load_run(run_dir)
    assert len(run.metrics) == 19
    assert any("torn" in w for w in run.warnings)


def test_corrupt_last_line_with_newline_is_an_error(run_dir):
    _rewrite(run_dir, lambda ls: "\n".join(ls[:-1] + ["{oops"]) + "\n")
    with pytest.raises(RunDataError, match="line 20"):
        load_run(run_dir)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("[1, 2]", "expected a JSON object"),
        ('{"x": 1}', "no integer 'step'"),
        ('{"step": "3"}', "no integer 'step'"),
    ],
)
def test_malformed_records(run_dir, line, message):
    _rewrite(run_dir, lambda ls: "\n".join(ls[:5] + [line] + ls[5:]) + "\n")
    with pytest.raises(RunDataError, match=message):
        load_run(run_dir)


def test_empty_metrics_is_too_few_rows(run_dir):
    (run_dir / "metrics.jsonl").write_text("\n")
    with pytest.raises(RunDataError, match="too few rows"):
        load_run(run_dir)


def test_duplicated_steps_keep_the_last(run_dir):
    _rewrite(run_dir, lambda ls: "\n".join(ls + ['{"step": 3, "train/lr": 9.0}']) + "\n")
    with pytest.warns(RunDataWarning, match="duplicated"):
        run = load_run(run_dir)
    assert len(run.metrics) == 20
    assert run.metrics.loc[run.metrics["step"] == 3, "train/lr"].item() == 9.0


def test_numeric_column_errors():
    frame = pd.DataFrame(
        {
            "a": [1.0, None, 3.0],
            "s": ["x", "y", "z"],
            "b": [True, False, True],
            "mixed": [1.0, "bad", None],
        }
    )
    assert np.isnan(numeric_column(frame, "a")[1])
    with pytest.raises(RunDataError, match="missing column 'zz'"):
        numeric_column(frame, "zz")
    with pytest.raises(RunDataError, match="not numeric"):
        numeric_column(frame, "s")
    with pytest.raises(RunDataError, match="boolean"):
        numeric_column(frame, "b")
    with pytest.raises(RunDataError, match=r"row 1: 'bad'"):
        numeric_column(frame, "mixed")


@pytest.mark.parametrize("ext", ["csv", "jsonl", "json", "parquet"])
def test_read_table_by_extension(tmp_path, ext):
    frame = pd.DataFrame({"step": [0, 1, 2], "g": [1.0, 0.5, 0.25]})
    path = tmp_path / f"t.{ext}"
    if ext == "csv":
        frame.to_csv(path, index=False)
    elif ext == "jsonl":
        path.write_text("\n".join(json.dumps(r) for r in frame.to_dict("records")) + "\n")
    elif ext == "json":
        path.write_text(json.dumps(frame.to_dict("records")))
    else:
        frame.to_parquet(path)
    back = read_table(path)
    assert list(back["g"]) == [1.0, 0.5, 0.25]


def test_read_table_errors(tmp_path):
    with pytest.raises(RunDataError, match="no such file"):
        read_table(tmp_path / "x.csv")
    (tmp_path / "x.txt").write_text("a")
    with pytest.raises(RunDataError, match="unsupported table extension"):
        read_table(tmp_path / "x.txt")
    (tmp_path / "e.csv").write_text("step,g\n")
    with pytest.raises(RunDataError, match="too few rows"):
        read_table(tmp_path / "e.csv")
    (tmp_path / "bad.parquet").write_text("not parquet")
    with pytest.raises(RunDataError, match="cannot read table"):
        read_table(tmp_path / "bad.parquet")
