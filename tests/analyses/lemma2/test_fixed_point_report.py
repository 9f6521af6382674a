"""The report renders each arm of the fixed point: its outcome, its statistic and the signed progress."""

from __future__ import annotations

from analyses.lemma2.families import construction, decide
from analyses.lemma2.fixed_point_controls import FixedPointControls
from analyses.suite import SuiteAnalysis
from reports.sections import lemma2_blocks


def _text(blocks) -> str:
    return "\n".join(str(b) for b in blocks)


def test_the_report_states_each_arm_and_the_controls():
    main = decide(construction("both -> m_k (CE 60%, reverse 40%)"))
    free = decide(construction("label-free moves toward p_(k-1), s = 1/2"))
    permuted = decide(construction("relabelled inputs: toward the permuted labels' m_k, g_k (50%)"))
    controls = FixedPointControls(1, main, permuted, free)
    text = _text(lemma2_blocks(SuiteAnalysis([], {}, [], {}, {"fixed_point_controls_chunk1": controls})))
    assert "both move toward m_k" in text
    assert "toward its own optimum" in text and "toward the other's" in text
    assert "reverse: toward m_k" in text and "40%" in text  # the reverse training's signed progress toward m_k
    assert "controls (calibrated)" in text


def test_a_chunk_without_controls_says_so():
    main = decide(construction("CE -> m_k, reverse -> g_k (80%)"))
    text = _text(lemma2_blocks(SuiteAnalysis([], {}, [], {}, {"fixed_point_chunk1": main})))
    assert "each loss moves toward its own optimum" in text and "no controls run" in text
