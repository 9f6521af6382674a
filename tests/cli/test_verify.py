"""The main job: suite composition, output-directory safety, and --quick end to end (slow)."""

from __future__ import annotations

import json
import time

import pytest

from zerolock_theory.cli import main
from zerolock_theory.workflows.verify import FULL, QUICK, suite_points


def test_suite_has_every_required_run():
    for spec in (QUICK, FULL):
        names = [p.name for p in suite_points(spec)]
        assert len(names) == len(set(names))
        for label in ("zerolock-forward", "zerolock-reverse", "backprop"):
            assert sum(n.startswith(label) and f"lr-{spec.lr:g}_" in n for n in names) == len(spec.seeds)
        lrs = {n.split("_")[1] for n in names if n.startswith("zerolock-forward")}
        assert len(lrs) >= 3, "a learning-rate sweep needs at least three rates"
    assert len(FULL.seeds) >= 3


def test_verify_refuses_foreign_non_empty_out(tmp_path, capsys):
    (tmp_path / "mine.txt").write_text("data")
    assert main(["verify", "--quick", "--out", str(tmp_path)]) == 2
    assert "not a verify directory" in capsys.readouterr().err
    assert (tmp_path / "mine.txt").read_text() == "data"


@pytest.mark.slow
def test_verify_quick_end_to_end(tmp_path, capsys):
    out = tmp_path / "verify"
    tic = time.perf_counter()
    assert main(["verify", "--quick", "--out", str(out)]) == 0
    elapsed = time.perf_counter() - tic
    printed = capsys.readouterr().out
    html = (out / "report" / "report.html").read_text()
    for claim in ("Lemma 2", "Assumption 5", "Theorem 1", "Proposition 1"):
        assert claim in html and claim in printed
    analysis = json.loads((out / "analysis" / "analysis.json").read_text())
    assert analysis
    pngs = list((out / "report").rglob("*.png"))
    assert pngs and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 2000 for p in pngs)
    print(f"verify --quick took {elapsed:.0f}s")
