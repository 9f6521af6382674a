"""``zerolock probe fixed-point``: bad input is one line and exit 2 with nothing written; a tiny real run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analyses.lemma2.fixed_point import OUTCOMES, FixedPointResult
from analyses.results import load_result
from zerolock_theory.app.cli import main

BASE = ["probe", "fixed-point"]


def _tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else b"" for p in sorted(root.rglob("*"))}


@pytest.mark.parametrize(("argv", "phrase"), [
    (["--chunk", "0"], "chunk must lie in [1, 4]"),
    (["--chunk", "5", "--chunks", "4"], "chunk must lie in [1, 4]"),
    (["--epsilon", "0"], "epsilon must lie in (0, 1)"),
    (["--alpha", "1.5"], "alpha must lie in (0, 1)"),
    (["--steps-max", "10", "--window", "20"], "steps_max must exceed window"),
    (["--seeds", "0"], "seeds must be >= 1"),
    (["--lr", "nan"], "lr must be a positive number"),
    (["--model", "no/such/model"], "does not exist"),
    (["--seeds", "three"], "invalid int value"),
    (["--chunks", "20"], "cannot split 8 decoder layers into 20 chunks"),  # found when the model loads
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys, argv, phrase) -> None:
    monkeypatch.chdir(tmp_path)
    before = _tree(tmp_path)
    with pytest.raises(SystemExit) if "three" in argv else _no_raise():
        code = main([*BASE, *argv, "--out", "out"])
        assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and phrase in err[0] and "Traceback" not in err[0]
    assert _tree(tmp_path) == before


class _no_raise:  # noqa: N801 (a context manager used like pytest.raises)
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("kind", ["file", "non-empty"])
def test_existing_out_is_refused(tmp_path, capsys, kind) -> None:
    out = tmp_path / "out"
    if kind == "file":
        out.write_text("mine")
    else:
        out.mkdir()
        (out / "notes.txt").write_text("precious")
    before = _tree(tmp_path)
    assert main([*BASE, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and ("not empty" in err[0] or "not a directory" in err[0])
    assert _tree(tmp_path) == before


def test_a_tiny_run_writes_a_result(tmp_path, capsys) -> None:
    out = tmp_path / "fp"
    argv = [*BASE, "--chunks", "2", "--chunk", "2", "--seeds", "3", "--steps-max", "12", "--window", "4",
            "--n-positions", "8", "--lora-rank", "2", "--out", str(out)]
    assert main(argv) == 0
    result = load_result(out / "fixed_point.json")
    assert isinstance(result, FixedPointResult) and result.outcome in OUTCOMES
    assert [s.seed for s in result.seeds] == [0, 1, 2] and result.chunk == 2
    for seed in result.seeds:
        for side in (seed.forward, seed.reverse):
            assert side.steps <= 11 and side.loss_end <= side.loss_start
            assert 0.0 <= side.tv_m <= 1.0 and 0.0 <= side.tv_g <= 1.0
    printed = capsys.readouterr().out
    assert f"outcome: {result.outcome}" in printed and printed.count("seed ") == 3
    assert json.loads((out / "fixed_point.json").read_text())["kind"] == "fixed_point"
