"""The sentence under the verdict table states the family that Holm's correction actually corrects."""

from __future__ import annotations

import re

from analyses.registry import corrected
from analyses.verdict import Evidence, Verdict
from reports.wording import CORRECTION, bottom_line, verdict_markdown

ROWS = [  # (claim, outcome, p): two decided rows, a not-testable row whose test ran, one without a test
    ("theorem1_rate_reverse", "falls toward zero at the bound's rate or faster", 0.001),
    ("versus_backprop", "forward: no difference detected; reverse: no difference detected", 0.30),
    ("assumption5_paper", "not testable", 0.62),
    ("assumption5_implemented", "not testable", None),
    ("systems_memory", "not measured", None),
    ("lemma2_stated", "not measured", None),
]


def _table() -> list[Verdict]:
    return corrected([Verdict(key, outcome, Evidence("constructed", p_value=p)) for key, outcome, p in ROWS])


def _said_in_family(outcome: str, has_p: bool) -> bool:
    """What the sentence says about a row: its sentence naming "not in the family" excludes, the others include."""
    sentences = CORRECTION.split(". ")
    excluded = next(x for x in sentences if "not in the family" in x)
    included = " ".join(x for x in sentences if x is not excluded)
    if outcome == "not testable":
        says_in = "not-testable rows whose interval could not tell the outcomes apart included" in included
        says_out = "not-testable rows without a test" in excluded
        return says_in if has_p else not says_out
    if outcome == "not measured":
        return "not-measured" not in excluded
    return has_p and "every row that ran a seed-level test" in included


def test_the_sentence_names_the_family_that_is_corrected():
    table = _table()
    family = [v for v in table if v.correction is not None]
    assert {v.claim for v in family} == {"theorem1_rate_reverse", "versus_backprop", "assumption5_paper"}
    assert all(v.correction.family == len(family) for v in family)
    for v in table:
        assert _said_in_family(v.outcome, v.evidence.p_value is not None) == (v.correction is not None), v.claim


def test_the_table_prints_the_sentence_and_counts_the_same_family():
    table = _table()
    text = verdict_markdown(table, "constructed")
    assert CORRECTION in text
    found = re.search(r"Holm over the (\d+) ", bottom_line(table))
    assert found and int(found.group(1)) == sum(v.correction is not None for v in table) == 3


def test_a_card_whose_decision_does_not_survive_holm_is_not_coloured_as_decided():
    """A decided row whose p survives alone but not the correction shows the "mixed or undecided" colour on
    its card, as the bottom line leaves it uncounted; a surviving one keeps its outcome's colour."""
    from analyses.registry import claim
    from reports.page import _card

    rows = [("theorem1_proof_reverse", "within Σ η_t² along the run", 0.018),
            ("theorem1_rate_reverse", "falls toward zero at the bound's rate or faster", 0.02),
            ("assumption5_paper", "not testable", 0.5), ("versus_backprop", "not tuned", 0.4)]
    table = corrected([Verdict(key, outcome, Evidence("constructed", p_value=p)) for key, outcome, p in rows])
    weak = table[0]
    assert weak.correction.survives is False and not weak.counted
    assert claim(weak.claim).outcomes[weak.outcome].tone == "holds" and _card(weak).tone == "mixed"
    strong = corrected([Verdict(*rows[0][:2], Evidence("constructed", p_value=0.001))])[0]
    assert strong.counted and _card(strong).tone == "holds"
