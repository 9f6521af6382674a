"""The memory row's map rule against a hostile referee's constructions (``scripts/break_memory_rule.py``).

Each construction is written as the suite writes ``memory_map.json`` and ``systems.json`` and read
through ``memory_claim`` and the row's ``decide``; every construction must read its truth. ``FIXED``
names the constructions that once broke the rule and what broke, so that a return of the same break
is recognised by its name."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

from analyses.systems.memory import MAP_OUTCOMES, memory_claim, place_on_map

_PATH = Path(__file__).resolve().parents[3] / "scripts" / "break_memory_rule.py"
_SPEC = importlib.util.spec_from_file_location("break_memory_rule", _PATH)
harness = importlib.util.module_from_spec(_SPEC)
sys.modules.setdefault("break_memory_rule", harness)
_SPEC.loader.exec_module(harness)

FIXED = {
    "a_size_repeated_disagreeing_below_first":
        "a size measured twice is not merged: the word depends on the order of the repeats in the file "
        "(0.70 then 0.80 at 128 reads 'rises above 0.735 again')",
    "a_size_repeated_disagreeing_above_first":
        "a size measured twice is not merged: 0.80 then 0.70 at 128 gives the degenerate bracket [128, 128]",
    "only_2_sizes_short_line":
        "with 2 sizes the one setting decides the word, yet the short line names the 2-size map's crossing "
        "('reaches 0.735 near 113 tokens') and not the setting that decided",
    "map_without_K": "a map without 'K' escapes as a bare KeyError, not RunDataError (int(data['K']) is read "
                     "outside the try)",
    "systems_without_split_map_present":
        "a complete map is ignored when systems.json has no memory split: the row says 'not measured'",
    "map_at_K2_primary_K4": "the map's K is not checked against the primary (largest) K: a K = 2 map decides "
                            "the K = 4 row",
    "map_at_K8_primary_K4": "the map's K is not checked against the suite's Ks: a K = 8 map decides the row",
    "map_micro_batches_differ": "the map's micro-batches are not checked against the suite's setting",
    "nan_zerolock_before_the_crossing": "a NaN byte count is read as 'above 0.735'; the named crossing is NaN "
                                        "('near nan tokens')",
    "nan_zerolock_after_reaching": "a NaN byte count after the crossing reads as a rise above 0.735",
    "inf_1f1b_total": "an infinite 1F1B peak gives a ratio of 0, which counts as reaching 0.735",
    "inf_zerolock_total": "an infinite ZeroLock peak is accepted and read as 'above 0.735'",
    "negative_1f1b_total": "a negative 1F1B peak is accepted by the map (the one-setting rows reject it): the "
                           "negative ratio makes the paper's claim hold",
    "a_size_of_0_tokens": "a size of 0 tokens escapes as a bare ValueError (log 0 in the crossing), not "
                          "RunDataError",
}

CASES = [pytest.param(c, id=c.name) for c in harness.CONSTRUCTIONS]


def test_every_fixed_break_names_a_construction():
    assert set(FIXED) <= {c.name for c in harness.CONSTRUCTIONS}


@pytest.mark.parametrize("construction", CASES)
def test_the_row_reads_the_construction_truth(tmp_path, construction):
    got = harness.read(construction, tmp_path)
    assert got.agrees, (construction.truth, construction.bracket, got.outcome, got.detail)


def test_the_harness_catches_a_wrong_truth(tmp_path):
    """A construction whose stated truth is false is reported as a disagreement."""
    plain = next(c for c in harness.CONSTRUCTIONS if c.name == "crosses_between_the_last_two")
    wrong = harness.Construction("wrong", plain.build, MAP_OUTCOMES[1], None, "memory_map")
    assert harness.read(plain, tmp_path / "a").agrees and not harness.read(wrong, tmp_path / "b").agrees


def test_the_crossing_is_interpolated_in_log_tokens_inside_its_bracket(tmp_path):
    """With a wide bracket (80 to 1000 tokens) the named crossing stays inside it, and is the log-linear
    interpolation of the two measured ratios, whatever its distance from the true crossing."""
    uneven = next(c for c in harness.CONSTRUCTIONS if c.name == "uneven_sizes")
    found = memory_claim(uneven.build(tmp_path)).map
    a, b = (p for p in found.points if p.tokens in found.bracket)
    w = (a.total - 0.735) / (a.total - b.total)
    assert found.bracket == [80, 1000] and 80 < harness.N_STAR < found.crossing_tokens < 1000
    assert found.crossing_tokens == pytest.approx(math.exp(math.log(80) + w * math.log(1000 / 80)))


def test_place_on_map_reads_a_measured_size_exactly(tmp_path):
    plain = next(c for c in harness.CONSTRUCTIONS if c.name == "reaches_only_at_the_largest")
    found = memory_claim(plain.build(tmp_path)).map
    assert place_on_map(found, 64).startswith("at 64 tokens per micro-batch the total ratio is 0.800")
    assert place_on_map(found, 128).endswith("at or below 0.735")
    assert "outside" in place_on_map(found, 256)


def test_a_repeated_size_is_one_point_whatever_the_order(tmp_path):
    """128 tokens measured at 0.70 and 0.80: one point at the largest ratio, the smallest beside it, and the
    same map from either order of the repeats."""
    maps = [memory_claim(harness.write(tmp_path / str(i), harness._duplicate(*pair))).map
            for i, pair in enumerate(((0.7, 0.8), (0.8, 0.7)))]
    assert maps[0] == maps[1]
    point = next(p for p in maps[0].points if p.tokens == 128)
    assert [p.tokens for p in maps[0].points] == [32, 64, 128, 256, 512]
    assert (point.repeats, point.total, point.lowest) == (2, pytest.approx(0.8), pytest.approx(0.7))
    assert maps[0].bracket == [128, 256] and maps[0].reaches_from == 256


def test_a_map_at_another_setting_is_shown_and_says_why_it_did_not_decide(tmp_path):
    con = next(c for c in harness.CONSTRUCTIONS if c.name == "map_at_K2_primary_K4")
    result = memory_claim(con.build(tmp_path))
    assert result.reason == "" and result.map is not None and result.primary_chunks == 4
    assert result.map_unused == "the map is at K = 2, the row's primary setting at K = 4"
    short = harness._short(result)
    assert short.startswith("K = 4, 4 micro-batches") and "map not used: the map is at K = 2" in short
    assert "near" not in short


@pytest.mark.parametrize("name, says", [("map_without_K", "no 'K'"), ("a_size_of_0_tokens", "tokens"),
                                        ("negative_1f1b_total", "finite byte count >= 0"),
                                        ("inf_1f1b_total", "finite byte count >= 0"),
                                        ("nan_zerolock_after_reaching", "finite byte count >= 0")])
def test_a_malformed_map_is_one_line_naming_the_entry(tmp_path, name, says):
    con = next(c for c in harness.CONSTRUCTIONS if c.name == name)
    with pytest.raises(harness.RunDataError) as caught:
        memory_claim(con.build(tmp_path))
    assert "\n" not in str(caught.value) and says in str(caught.value) and "memory_map.json" in str(caught.value)
