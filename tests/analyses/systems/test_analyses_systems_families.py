"""The memory row on known-answer maps (``analyses.systems.families``): the outcome and the crossing
come from where the curve meets 0.735, the same whichever smallest size was measured."""

from __future__ import annotations

import math

import pytest

from analyses.registry import ClaimInputs, claim
from analyses.systems.families import CONSTRUCTIONS, SEQ_LEN, write_map
from analyses.systems.memory import CLAIMED_MEMORY_RATIO, MAP_OUTCOMES, memory_claim, place_on_map

CASES = [(c, s) for c in CONSTRUCTIONS for s in c.smallest]


@pytest.mark.parametrize(("construction", "smallest"), CASES, ids=[f"{c.name}-from-{s}" for c, s in CASES])
def test_each_construction_reads_its_truth(tmp_path, construction, smallest):
    result = memory_claim(write_map(tmp_path, construction, smallest))
    assert result.reason == "memory_map" and result.outcome == construction.truth
    assert result.outcome in MAP_OUTCOMES
    found = result.map
    assert [p.total for p in found.points] == pytest.approx([construction.ratio(n) for n in construction.sizes(smallest)])
    if construction.bracket is None:
        assert found.crossing_tokens is None and found.bracket is None
    else:
        a, b = construction.bracket
        assert found.bracket == [a, b] and a <= found.crossing_tokens <= b
        assert abs(math.log(found.crossing_tokens / construction.crossing)) < 0.1


@pytest.mark.parametrize("construction", [c for c in CONSTRUCTIONS if len(c.smallest) > 1], ids=lambda c: c.name)
def test_the_curve_reads_the_same_from_any_smallest_size(tmp_path, construction):
    """The row's outcome, its tone and its named crossing do not move with the first measured size."""
    rows = []
    for smallest in construction.smallest:
        result = memory_claim(write_map(tmp_path / str(smallest), construction, smallest))
        verdict = claim("systems_memory").decide(ClaimInputs({"systems_memory": result}, {}))
        rows.append((verdict.outcome, result.map.crossing_tokens, result.map.bracket))
    assert len(set(map(repr, rows))) == 1, rows


def test_the_referee_case_crosses_one_below_the_first_sizes(tmp_path):
    """The crossing curve is above 1F1B at 16 and 32 tokens and below it from 64: the row does not follow."""
    crossing = next(c for c in CONSTRUCTIONS if c.name == "crosses_once")
    assert crossing.ratio(32) >= 1.0 > crossing.ratio(64)
    outcomes = {memory_claim(write_map(tmp_path / str(s), crossing, s)).outcome for s in (32, 64)}
    assert outcomes == {MAP_OUTCOMES[0]}


def test_exactly_at_the_claim_counts_as_reaching_it(tmp_path):
    exact = next(c for c in CONSTRUCTIONS if c.name == "exactly_at")
    found = memory_claim(write_map(tmp_path, exact, 32)).map
    assert found.points[2].total == CLAIMED_MEMORY_RATIO and found.crossing_tokens == 128.0
    assert found.reaches_from == 128 and "between the measured 64 and 128" in found.where


def test_the_row_says_where_the_paper_setting_lies(tmp_path):
    crossing = next(c for c in CONSTRUCTIONS if c.name == "crosses_once")
    result = memory_claim(write_map(tmp_path, crossing, 32))
    text = claim("systems_memory").measured(claim("systems_memory").decide(
        ClaimInputs({"systems_memory": result}, {})).evidence)
    assert "the paper states no tokens per micro-batch" in text and "between the measured 128 and 256" in text
    assert place_on_map(result.map, 512).endswith("at or below 0.735")
    assert place_on_map(result.map, 64).endswith("above 0.735")
    assert "outside" in place_on_map(result.map, 8 * SEQ_LEN // 16)
    below = next(c for c in CONSTRUCTIONS if c.name == "below_everywhere")
    assert "at or below the smallest measured size, 16 tokens" in place_on_map(memory_claim(
        write_map(tmp_path / "b", below, 16)).map)
