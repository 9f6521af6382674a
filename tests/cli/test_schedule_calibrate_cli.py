"""benchmarks/schedule_calibrate.py: bad input is one line on stderr, exit status 2, nothing written."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "schedule_calibrate.py"


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("schedule_calibrate", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("args", "message"), [
    (["--stages", "1"], "--stages must be >= 2"),
    (["--micro-batches", "3"], "must be >= 1 and divide --batch-size 4"),
    (["--micro-batches", "0"], "must be >= 1"),
    (["--steps", "3", "--warmup", "2"], "--steps >= warmup + 2"),
    (["--cores", "0"], "--cores, --repeats"),
    (["--model", "/no/such/model"], "no such model directory"),
])
@pytest.mark.parametrize("mode", ["validate", "predict"])
def test_bad_arguments(script, tmp_path, capsys, mode, args, message) -> None:
    out = tmp_path / "out"
    assert script.main([mode, "--out", str(out), *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("schedule_calibrate: error: ") and message in err
    assert not out.exists()


def test_out_is_a_file_or_holds_a_result(script, tmp_path, capsys) -> None:
    (tmp_path / "file").write_text("mine")
    assert script.main(["validate", "--out", str(tmp_path / "file")]) == 2
    assert "is a file" in capsys.readouterr().err
    (tmp_path / "schedule_prediction.json").write_text("{}")
    assert script.main(["predict", "--out", str(tmp_path)]) == 2
    assert "pass --overwrite" in capsys.readouterr().err
    assert (tmp_path / "schedule_prediction.json").read_text() == "{}" and (tmp_path / "file").read_text() == "mine"
