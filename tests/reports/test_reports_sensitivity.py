"""The report's sensitivity map: a section right after the cards, a coloured figure, a table, the changed claims named."""

from __future__ import annotations

import io

import numpy as np
from matplotlib.image import imread

from analyses.registry import claim, claims
from analyses.sensitivity import SENSITIVITY, SettingVerdicts, sensitivity_map
from analyses.suite_result import SuiteAnalysis
from analyses.verdict import Evidence, Verdict
from reports.figures import FIGURES, render_figure, save_figure
from reports.page import report_blocks
from reports.sensitivity import TONE_COLORS, changed_sentence, sensitivity_blocks, shown_claims

FLIP = "lemma2_stated"  # a row with a "holds" and a "fails" outcome
HOLD, FAIL = "holds (exact)", "fails"


def _suite(flip: bool) -> SuiteAnalysis:
    def verdicts(outcome: str) -> list[Verdict]:
        return [Verdict(c.key, outcome if c.key == FLIP else "not measured", Evidence("x")) for c in claims()]

    rows = [SettingVerdicts("default", "default", verdicts(HOLD), 6),
            SettingVerdicts("chunks-2", "model.chunks=2", verdicts(FAIL if flip else HOLD), 6)]
    found = sensitivity_map(rows)
    return SuiteAnalysis([], {}, [], {}, {"sensitivity": found})  # the verdict table itself is not under test


def test_the_sentence_names_the_changed_claim_with_its_settings():
    found = _suite(flip=True).get(SENSITIVITY)
    text = changed_sentence(found)
    assert claim(FLIP).title in text and f"{HOLD}: default" in text and f"{FAIL}: model.chunks=2" in text
    assert changed_sentence(_suite(flip=False).get(SENSITIVITY)).startswith("No claim's outcome changes")


def test_section_sits_after_the_cards_with_figure_and_one_table_row_per_claim():
    suite = _suite(flip=True)
    blocks = report_blocks(suite)
    kinds = [b.kind for b in blocks]
    start = kinds.index("cards") + 1
    while kinds[start] == "p":  # the bottom line and the correction stated under the cards
        start += 1
    assert blocks[start].kind == "h2" and blocks[start].text.startswith("Sensitivity map") and "sensitive" in blocks[start].text
    section = sensitivity_blocks(suite)
    assert blocks[start:start + len(section)] == section
    (grid,) = [b for b in section if b.kind == "table"]
    assert grid.headers == ("claim", "default", "model.chunks=2") and len(grid.rows) == len(claims())
    row = grid.rows[[c.key for c in claims()].index(FLIP)]
    assert row[1].startswith(f"{HOLD}: ") and row[2].startswith(f"{FAIL}: ")
    assert any(b.kind == "figure" and b.text == "sensitivity" for b in section)
    assert sensitivity_blocks(SuiteAnalysis([], {}, [], {}, {})) == []  # other suites: no section


def test_figure_colours_each_drawn_cell_by_its_tone():
    suite = _suite(flip=True)
    found = suite.get(SENSITIVITY)
    assert shown_claims(found) == [[c.key for c in claims()].index(FLIP)]  # rows without an answer are not drawn
    fig = render_figure("sensitivity", suite)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    image = imread(io.BytesIO(buffer.getvalue()))[..., :3]
    for tone in ("holds", "fails"):
        rgb = np.array([int(TONE_COLORS[tone][i:i + 2], 16) / 255 for i in (1, 3, 5)])
        assert (np.abs(image - rgb).max(axis=-1) < 0.02).sum() > 500, tone
    assert FIGURES["sensitivity"](SuiteAnalysis([], {}, [], {}, {})) is None


def test_figure_saves_as_png_and_svg(tmp_path):
    fig = render_figure("sensitivity", _suite(flip=False))
    assert save_figure(fig, tmp_path / "s.png", "png").stat().st_size > 2048
    assert save_figure(fig, tmp_path / "s.svg", "svg").stat().st_size > 2048
