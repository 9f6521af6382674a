"""``scripts/reread_factorial.py``: a factorial's recorded numbers read as ``zerolock diagnose`` reads its
directory; the recorded SmolLM2 factorial (docs/DIAGNOSIS.md, section 4b) reads as published."""

from __future__ import annotations

import json
from pathlib import Path

from analyses.versus.factorial import analyze_factorial, factorial
from tests.analyses.break_scripts import load_script
from tests.analyses.versus.test_factorial import NOISE, _write_tune

reread = load_script("reread_factorial")
RECORDED = Path(__file__).resolve().parents[3] / "docs" / "results" / "diagnosis"


def _words(f) -> tuple:
    return ([(p.contrast, p.reading) for p in f.predictions], [(p.contrast, p.reading) for p in f.stable_readings],
            [(r.control, r.lr) for r in f.rows])


def test_a_recorded_directory_reads_as_the_directory(tmp_path):
    for recipe, mean in {"embedded_backprop_wide": 5.0, "embedded_plain": 5.4, "embedded_alpha_out": 5.1}.items():
        _write_tune(tmp_path / recipe, recipe, {s: mean + NOISE[s] for s in range(3)})
    record = json.loads(json.dumps(reread.record(tmp_path)))
    assert record["model"] == "embedded" and set(record["runs"]) == {"backprop", "plain", "alpha_out"}
    again = factorial(reread.runs_of(record), model=record["model"], chunks=record["chunks"])
    assert _words(again) == _words(analyze_factorial(tmp_path))


def test_the_recorded_smollm2_factorial_reads_as_published():
    record = json.loads((RECORDED / "factorial_smollm2.json").read_text())
    f = factorial(reread.runs_of(record), model=record["model"], chunks=record["chunks"])
    assert f.row("backprop").lr == 0.8 and f.stable_lr == 0.4 and f.stable_above == 0.8 and f.stable_runs == 3
    assert f.mechanisms["M1"] == "not testable" and f.mechanisms["M2"] == "supported"
    assert f.mechanisms["M3"] == "not testable" and f.row("twin_half").lr == 0.0015625
    assert f.row("alpha_one").lr == 0.003125 and not f.row("alpha_one").on_boundary
    assert f.row("twin_one").lr == 0.00078125 and not f.row("twin_one").on_boundary
    assert {p.contrast: p.reading for p in f.predictions if p.contrast.startswith("twin_one")} == {
        "twin_one_minus_twin_half": "undecided", "twin_one_minus_alpha_one": "refuted"}
    assert {p.contrast: p.reading for p in f.stable_readings} == {"share_alpha_out": "refuted",
                                                                  "share_twin_half": "refuted"}


def test_a_record_and_a_later_directory_merge_into_one_factorial(tmp_path, capsys):
    means = {"embedded_backprop_wide": 5.0, "embedded_plain": 5.4, "embedded_alpha_out": 5.1}
    for recipe, mean in means.items():
        _write_tune(tmp_path / "all" / recipe, recipe, {s: mean + NOISE[s] for s in range(3)})
        _write_tune(tmp_path / ("later" if recipe == "embedded_alpha_out" else "first") / recipe, recipe,
                    {s: mean + NOISE[s] for s in range(3)})
    first = tmp_path / "first.json"
    first.write_text(json.dumps(reread.record(tmp_path / "first")))
    merged = reread.gather([first, tmp_path / "later"])
    again = factorial(reread.runs_of(merged), model=merged["model"], chunks=merged["chunks"])
    assert set(merged["runs"]) == {"backprop", "plain", "alpha_out"}
    assert _words(again) == _words(analyze_factorial(tmp_path / "all"))
    assert reread.main(["--record", str(first), str(tmp_path / "first")]) == 2
    assert "also in an earlier source" in capsys.readouterr().err
    assert reread.main(["--record", str(tmp_path / "later" / "embedded_alpha_out")]) == 2  # a tune, not a factorial
    assert "holds no finished zerolock tune directory" in capsys.readouterr().err
    page = tmp_path / "page.md"
    page.write_text("# a page\n\nkept\n")
    assert reread.main([str(first), str(tmp_path / "later"), "--publish", str(page)]) == 2
    assert page.read_text() == "# a page\n\nkept\n"
    page.unlink()
    assert reread.main([str(first), str(tmp_path / "later"), "--publish", str(page)]) == 0
    text = page.read_text()
    assert "<!-- zerolock diagnose --publish embedded: begin -->" in text and "reread_factorial.py" in text
