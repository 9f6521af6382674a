"""docs/THEOREM1.md states the rate rule's constants with the code's values: every row of its
constants table, the bound's exponent, the block edges, the late window and its tails, and the
bound's falls over those tails at T = 1000."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from analyses.stats.seeds import MIN_SEEDS
from analyses.theorem1 import rate

DOC = Path(__file__).resolve().parents[3] / "docs" / "THEOREM1.md"


def _rate_section() -> str:
    text = DOC.read_text(encoding="utf-8")
    return text[text.index("## (a) The rate"):text.index("## (b)")]


def test_every_constant_in_the_docs_table_is_the_codes():
    rows = re.findall(r"^\| `([A-Za-z_.]+)` \| ([0-9.]+) \|", _rate_section(), flags=re.M)
    names = {name for name, _ in rows}
    expected = {"WINDOW", "BLOCKS", "MIN_HORIZON", "MIN_BLOCK_POINTS", "TRANSIENT_BETA", "LATE_START", "LATE_PARTS",
                "LATE_LEVEL", "TAIL_LEVEL", "LATE_MARGIN", "BEND_WEIGHT", "BEND_LEVEL", "BEND_MARGIN", "NO_DECAY_FALL",
                "NO_DECAY_LEVEL", "analyses.stats.seeds.MIN_SEEDS", "FLOOR_ALPHA", "BEND_ALPHA", "TAIL_ALPHA",
                "FLOOR_POWER", "FLOOR_GRID", "MAX_PHI"}
    assert names == expected, names ^ expected
    for name, value in rows:
        code = MIN_SEEDS if name.endswith("MIN_SEEDS") else getattr(rate, name)
        assert float(value) == pytest.approx(code), name


def test_the_exponent_edges_window_and_tails_in_the_docs_are_the_codes():
    section = _rate_section()
    beta = float(re.search(r"β_B = ([0-9.]+) at\s+T = 1000", section).group(1))
    assert beta == pytest.approx(rate.bound_beta(1000), abs=5e-4)
    edges = re.search(r"at T = 1000: ([0-9, ]+)\)", section).group(1)
    assert [int(x) for x in edges.split(", ")] == [round(e) for e in rate.block_edges(1000)]
    assert len(rate.block_edges(1000)) == rate.BLOCKS + 1 and "five edges" in section
    starts = re.search(r"left edges are ([0-9, ]+) at T = 1000", section).group(1)
    assert [int(x) for x in starts.split(", ")] == [round(s) for s in rate.late_starts(1000)]
    assert "(T/2, T]" in section and rate.LATE_START == 0.5
    falls = re.search(r"the same tail \(([0-9., ]+) at T = 1000\)", section).group(1)
    assert np.allclose([float(x) for x in falls.split(", ")], rate.bound_tail_falls(1000), atol=5e-4)
    assert not re.search(r"β_B = (?!0\.338)", section)  # every statement of the exponent is the code's
