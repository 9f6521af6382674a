"""The page with missing analyses: every claim row present, skipped ones say why."""

from __future__ import annotations

import html
import sys
from pathlib import Path

from analyses.registry import claims
from analyses.suite import analyze_runs
from reports.page import render_html, render_markdown, report_blocks, write_report

sys.path.insert(0, str(Path(__file__).parents[1] / "analyses"))
from synthetic_runs import write_run  # noqa: E402


def test_backprop_only_report_marks_claims_not_measured(tmp_path):
    run = write_run(tmp_path, "bp", method="backprop", direction="", probes=False, steps=60)
    suite = analyze_runs([run], n_boot=20)
    files = write_report(suite, tmp_path / "out")
    text = files.html.read_text(encoding="utf-8")
    assert all(html.escape(row.title) in text for row in claims())
    assert text.count("not measured") >= 4
    # the packaged prediction; "versus" falls back to the outcome curves without a tune directory
    assert set(files.figures) == {"convergence", "outcome", "versus", "systems_throughput"}
    assert "Skipped analyses" in text and "no systems.json given" in text


def test_html_and_markdown_escape_cells():
    from reports.page import Block

    blocks = [Block("h1", "T"), Block("table", headers=("a|b",), rows=(("<x> & y",),))]
    assert "&lt;x&gt; &amp; y" in render_html(blocks, {})
    assert "a\\|b" in render_markdown(blocks, {})


def test_blocks_open_with_the_scope_and_a_card_per_claim(tmp_path):
    suite = analyze_runs([write_run(tmp_path, "z", steps=40)], n_boot=10)
    blocks = report_blocks(suite)
    assert [b.kind for b in blocks[:5]] == ["h1", "p", "p", "legend", "cards"]  # the answer on the first screen
    assert blocks[2].text.startswith("Bottom line (") and blocks[5].text.startswith("Multiplicity: Holm")
    blocks = [b for b in blocks if b.kind != "legend" and not b.text.startswith("Bottom line (")]
    table_at = next(i for i, b in enumerate(blocks) if b.kind == "table")
    assert blocks[table_at - 1].kind == "details" and "Holm" in blocks[table_at].headers
    assert blocks[1].text.startswith("Scope: model tiny-random-llama") and "40 steps per run" in blocks[1].text
    assert "1 seed(s)" in blocks[1].text and "95% seed-level" in blocks[1].text
    assert [c.title for c in blocks[2].cards] == [row.title for row in claims()]
    assert [row[0] for row in blocks[table_at].rows] == [row.title for row in claims()]
    assert all(c.outcome == v.outcome for c, v in zip(blocks[2].cards, suite.claims, strict=True))
    kinds = [b.kind for b in blocks]
    assert kinds.count("details") == kinds.count("end")  # every collapsible part is closed
