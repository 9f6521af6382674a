"""The report's "why" section: a factorial directory among the analysis inputs puts the factorial's
table, the predictions' readings and each mechanism's reading into the page; ``zerolock diagnose``
prints the same rows, and refuses a directory without tune directories in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from analyses.suite import analyze_runs
from analyses.versus.factorial import FACTORIAL, factorial
from analyses.versus.tuning import TunedRun
from reports.diagnosis import compact_markdown, markdown
from reports.page import write_report
from tests.analyses.versus.test_factorial import NOISE, _smollm2_backprop, _write_tune
from zerolock_theory.app.cli import main


@pytest.fixture
def factorial_dir(tmp_path: Path) -> Path:
    root = tmp_path / "factorial"
    root.mkdir()
    for recipe, mean in {"embedded_backprop_wide": 5.0, "embedded_plain": 5.4, "embedded_alpha_out": 5.1}.items():
        _write_tune(root / recipe, recipe, {s: mean + NOISE[s] for s in range(3)})
    return root


def test_the_report_answers_why_with_a_factorial_among_its_inputs(factorial_dir, tmp_path):
    run = next(p for p in (factorial_dir / "embedded_plain").iterdir() if p.is_dir())
    suite = analyze_runs([run, factorial_dir], n_boot=20)
    found = suite.get(FACTORIAL)
    assert [r.control for r in found.rows] == ["backprop", "plain", "alpha_out"]
    assert found.mechanisms["M1"] == "supported"  # 0.3 of a 0.4 gap closed
    html = write_report(suite, tmp_path / "report").html.read_text(encoding="utf-8")
    assert "Why ZeroLock falls behind backprop" in html
    assert "α = ½, 1 on the output chunk" in html and "<td>M3, detaching: no gradient crosses a chunk boundary</td><td>not run</td>" in html


def test_diagnose_prints_the_table_and_refuses_a_directory_without_tunes(factorial_dir, tmp_path, capsys):
    assert main(["diagnose", str(factorial_dir)]) == 0
    out = capsys.readouterr().out
    assert "| α = ½, 1 on the output chunk | **0.1** |" in out and "- M1, the output chunk's teacher p_{K−1}: **supported**" in out
    assert main(["diagnose", str(factorial_dir), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kind"] == "versus_factorial"
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["diagnose", str(empty)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds no zerolock tune directory" in err[0]


def test_publish_replaces_only_its_models_block_and_refuses_a_file_without_it(factorial_dir, tmp_path, capsys):
    page = tmp_path / "README.md"
    begin, end = "<!-- zerolock diagnose --publish embedded: begin -->", "<!-- zerolock diagnose --publish embedded: end -->"
    other = "<!-- zerolock diagnose --publish smollm2-135m: begin -->\nkept\n<!-- zerolock diagnose --publish smollm2-135m: end -->"
    page.write_text(f"# title\n\n{begin}\nold\n{end}\n\n{other}\n", encoding="utf-8")
    assert main(["diagnose", str(factorial_dir), "--publish", str(page)]) == 0
    text = page.read_text(encoding="utf-8")
    assert "old" not in text and other in text and text.startswith("# title\n")
    assert "| α = ½, 1 on the output chunk | 0.1 |" in text and "M1 **supported**" in text
    mine = tmp_path / "mine.md"
    mine.write_text("my notes\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["diagnose", str(factorial_dir), "--publish", str(mine)]) == 2
    assert mine.read_text(encoding="utf-8") == "my notes\n"
    assert "holds no" in capsys.readouterr().err


def test_an_unstable_backprop_choice_prints_the_second_reading_beside_the_registered_one():
    plain = [TunedRun("zerolock-forward", 0.1, s, 4.04, 4.04, 20) for s in range(3)]
    alpha_out = [TunedRun("zerolock-forward", 0.1, s, 4.04 + d, 4.04 + d, 20) for s, d in enumerate((0.0, 0.001, -0.001))]
    f = factorial({"backprop": _smollm2_backprop(), "plain": plain, "alpha_out": alpha_out})
    md = markdown(f)
    assert "- M1, the output chunk's teacher p_{K−1}: **not testable**" in md
    assert "read again against backprop at its stable η_0, 0.4" in md and "registered 2026-12-07 04:06, after backprop's" in md
    assert md.index("**not testable**") < md.index("stable η_0, 0.4")  # the registered reading first
    assert "| M1 (decisive) |" in md.split("stable η_0, 0.4")[1] and "| refuted |" in md.split("stable η_0, 0.4")[1]
    assert "Against backprop at its stable η_0 0.4" in compact_markdown(f) and "M1 refuted (share" in compact_markdown(f)
    stable = factorial({"backprop": _smollm2_backprop(diverged=3.31), "plain": plain, "alpha_out": alpha_out})
    assert "stable η_0" not in markdown(stable) and "stable η_0" not in compact_markdown(stable)


def test_the_controls_alignment_along_their_runs_is_a_table_of_the_section(factorial_dir, tmp_path, capsys):
    from analyses.versus.factorial import alignment_file
    from tests.analyses.versus.test_factorial import RECIPES, _alignment_seed, _config

    for control, recipe, cosine in (("plain", "embedded_plain", 0.1), ("alpha_out", "embedded_alpha_out", 0.3)):
        data = {"config": _config(RECIPES / f"{recipe}.toml", 0.2, 0),
                "after_steps": {str(t): [_alignment_seed([cosine + t / 1000] * 4)] * 2 for t in (0, 50)}}
        (factorial_dir / alignment_file(control)).write_text(json.dumps(data))
    assert main(["diagnose", str(factorial_dir)]) == 0
    out = capsys.readouterr().out
    assert "| control | η_0 | chunk 1, after step 0 | chunk 1, after step 50 | all chunks, after step 50 | seeds |" in out
    assert "| α = ½, 1 on the output chunk | 0.2 | 0.3 [0.3, 0.3] | 0.35 [0.35, 0.35] | 0.35 [0.35, 0.35] | 2 |" in out
    run = next(p for p in (factorial_dir / "embedded_plain").iterdir() if p.is_dir())
    html = write_report(analyze_runs([run, factorial_dir], n_boot=20), tmp_path / "report").html.read_text(encoding="utf-8")
    assert "Chunk 1&#x27;s step against the output&#x27;s gradient along each control&#x27;s run" in html
    assert "<td>α = ½, 1 on the output chunk</td><td>0.2</td><td>0.3 [0.3, 0.3]</td>" in html
