"""The report's key: a legend of the tones, colours that never read as an error, a reason on
every card without an answer, and no NaN anywhere in the text."""

from __future__ import annotations

import colorsys
import re
import sys
from pathlib import Path

from analyses.registry import TONES, claims
from analyses.suite import analyze_runs
from reports.legend import TONE_COLORS, TONE_WORDS, legend_text
from reports.page import report_blocks, write_report

sys.path.insert(0, str(Path(__file__).parents[1] / "analyses"))
from synthetic_runs import write_run  # noqa: E402


def _text(html: str) -> str:
    """The page without its embedded images (base64 may hold any letters)."""
    return re.sub(r'src="data:[^"]*"', "", html)


def test_every_tone_has_words_and_a_colour_and_against_the_paper_is_not_red():
    assert set(TONE_WORDS) == set(TONE_COLORS) == set(TONES)
    assert TONE_WORDS["holds"] == "as the paper claims" and TONE_WORDS["fails"].startswith("against the paper")
    rgb = [int(TONE_COLORS["fails"][i:i + 2], 16) / 255 for i in (1, 3, 5)]
    hue = colorsys.rgb_to_hsv(*rgb)[0] * 360
    assert 30 < hue < 330, f"'against the paper' is drawn in a red ({hue:.0f} deg)"
    assert all(words in legend_text() for words in TONE_WORDS.values())


def test_a_backprop_only_page_has_the_key_and_a_reason_on_every_unanswered_card(tmp_path):
    run = write_run(tmp_path, "bp", method="backprop", direction="", probes=False, steps=60)
    suite = analyze_runs([run], n_boot=20)
    blocks = report_blocks(suite)
    kinds = [b.kind for b in blocks]
    assert kinds.index("legend") < kinds.index("cards")
    cards = blocks[kinds.index("cards")].cards
    unanswered = [c for c in cards if c.tone == "none"]
    assert len(unanswered) >= 4
    for card in unanswered:
        assert card.headline.strip() not in ("", "-") and len(card.headline) > 15, (card.title, card.headline)
    files = write_report(suite, tmp_path / "out")
    page = _text(files.html.read_text(encoding="utf-8"))
    assert '<p class="legend">Key:' in page and all(w in page for w in ("as the paper claims", "against the paper"))
    for colour in TONE_COLORS.values():
        assert colour in page
    markdown = files.markdown.read_text(encoding="utf-8")
    assert legend_text() in markdown
    for text in (page, markdown):
        assert not re.search(r"\bnan\b", text, re.IGNORECASE), re.search(r".{60}\bnan\b.{20}", text, re.I)


def test_a_zerolock_page_has_no_nan(tmp_path):
    suite = analyze_runs([write_run(tmp_path, "z", steps=40)], n_boot=10)
    files = write_report(suite, tmp_path / "out")
    for path in (files.html, files.markdown):
        text = _text(path.read_text(encoding="utf-8"))
        assert not re.search(r"\bnan\b", text, re.IGNORECASE), re.search(r".{60}\bnan\b.{20}", text, re.I)
    assert len(claims()) == len(next(b for b in report_blocks(suite) if b.kind == "cards").cards)


def test_drift_card_without_a_slope_says_what_is_missing():
    """The card that read ``s = nan (no interval) (first order ~ nan)``."""
    from analyses.assumption5.drift_order import drift_order
    from analyses.theorem1.claim_proof import ProofDrift, measured
    from analyses.theorem1.drift_budget import DriftBudget
    from analyses.verdict import Evidence

    budget = DriftBudget(label="zerolock-forward", outcome="not testable", reason="no_seed", horizon=32, seeds=0,
                         first_order=None, s_point=float("nan"), s_first=float("nan"), threshold=1.0, share=None,
                         signed=None, per_seed=[])
    found = ProofDrift("implemented", "zerolock-forward", drift_order([]), budget)
    text = measured(Evidence("few_seeds", result=found))
    assert "nan" not in text.lower() and "s = not estimated" in text and "n/a" in text
