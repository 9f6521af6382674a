"""Systems ratios from systems.json (analyses.systems.memory)."""

from __future__ import annotations

import json

import pytest
from synthetic_runs import write_systems

from analyses.io import RunDataError
from analyses.systems.memory import systems_comparison


def test_nested_layout_ratios(tmp_path):
    result = systems_comparison(write_systems(tmp_path))
    f1b = next(r for r in result.ratios if r.baseline == "1f1b")
    assert f1b.chunks == 4
    assert f1b.memory_reduction == pytest.approx(1 - 800 / 1000)  # peak = max over stages
    assert f1b.throughput_gain == pytest.approx(0.05)
    assert result.claimed_memory_reduction == 0.265 and result.claimed_throughput_gain == 0.049


def test_records_layout(tmp_path):
    path = tmp_path / "systems.json"
    path.write_text(
        json.dumps(
            {
                "results": [
                    {"method": "zerolock", "K": 2, "peak_bytes": 50, "tokens_per_s": 110},
                    {"method": "1F1B", "chunks": 2, "peak_bytes": 100, "tokens_per_s": 100},
                ]
            }
        )
    )
    (ratio,) = systems_comparison(tmp_path).ratios
    assert (ratio.baseline, ratio.memory_reduction) == ("1f1b", 0.5)
    assert ratio.throughput_gain == pytest.approx(0.1)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{", "invalid JSON"),
        ('{"zerolock": {"4": {"tokens_per_s": 1}}}', "peak"),
        ('{"other": 1}', "no measurements"),
        ('[{"K": 2}]', "needs a 'method'"),
    ],
)
def test_malformed_systems_json(tmp_path, text, message):
    (tmp_path / "systems.json").write_text(text)
    with pytest.raises(RunDataError, match=message):
        systems_comparison(tmp_path / "systems.json")


def test_missing_file(tmp_path):
    with pytest.raises(RunDataError, match="no such file"):
        systems_comparison(tmp_path / "none.json")


# --- memory_claim: the per-stage memory split, ZeroLock ÷ 1F1B ---------------------------------

from analyses.results import load_result  # noqa: E402
from analyses.systems.memory import CLAIMED_MEMORY_RATIO, MEMORY_OUTCOMES, MemoryClaim, memory_claim  # noqa: E402


def _split(total: float, activations: float) -> dict:
    weights = total - activations
    return {"weights": weights, "gradients": 0, "optimizer": 0, "activations": activations, "communication": 0,
            "total": total}


def _write_memory(tmp_path, zl_totals: list[float], K: int = 4, bp_total: float = 1000.0):
    """ZeroLock's stage 2 holds the peak total; 1F1B's stage 1 the peak total, stage 3 the peak activations."""
    zl = [[_split(t - 10, 100), _split(t, 200), _split(t - 20, 50)] for t in zl_totals]
    bp = [[_split(bp_total, 300), _split(bp_total - 100, 200), _split(bp_total - 200, 400)] for _ in zl_totals]
    data = {"zerolock": {str(K): {"peak_saved_bytes": [1], "tokens_per_s": 1.0, "memory": zl}},
            "1f1b": {str(K): {"peak_saved_bytes": [1], "tokens_per_s": 1.0, "memory": bp}}}
    (tmp_path / "systems.json").write_text(json.dumps(data))
    return tmp_path / "systems.json"


@pytest.mark.parametrize(("totals", "outcome"), [
    ([700.0, 700.0, 700.0], MEMORY_OUTCOMES[0]),
    ([735.0, 735.0, 735.0], MEMORY_OUTCOMES[0]),  # exactly the paper's ratio counts as reaching it
    ([900.0, 800.0, 950.0], MEMORY_OUTCOMES[1]),
    ([1000.0, 1100.0, 1050.0], MEMORY_OUTCOMES[2]),
    ([900.0, 1100.0, 950.0], "undecided"),
])
def test_memory_claim_returns_each_outcome(tmp_path, totals, outcome) -> None:
    result = memory_claim(_write_memory(tmp_path, totals))
    assert result.outcome == outcome and result.primary_chunks == 4
    (row,) = result.rows
    assert row.repeats == 3
    ratios = sorted(t / 1000.0 for t in totals)
    assert (row.total.low, row.total.estimate, row.total.high) == pytest.approx((ratios[0], ratios[1], ratios[2]))
    assert row.activations.estimate == pytest.approx(200 / 400)  # each method's largest stage, separately
    assert result.claimed_ratio == CLAIMED_MEMORY_RATIO == pytest.approx(0.735)
    assert row.zerolock_split["total"] == max(totals[0], totals[0] - 10)


def test_memory_claim_without_split_is_not_measured(tmp_path) -> None:
    path = write_systems(tmp_path)
    data = json.loads(path.read_text())
    for method in ("zerolock", "1f1b"):
        data[method]["4"].pop("memory")
    path.write_text(json.dumps(data))
    result = memory_claim(path)
    assert (result.outcome, result.rows, result.reason) == ("not measured", [], "no_memory_split")


def test_memory_claim_round_trips_json(tmp_path) -> None:
    result = memory_claim(_write_memory(tmp_path, [700.0, 720.0, 710.0]))
    again = MemoryClaim.from_json(result.to_json())
    assert again == result
    path = tmp_path / "memory.json"
    path.write_text(result.to_json())
    assert load_result(path) == result


def test_memory_claim_rejects_a_malformed_split(tmp_path) -> None:
    path = _write_memory(tmp_path, [700.0])
    data = json.loads(path.read_text())
    data["zerolock"]["4"]["memory"] = [[{"total": "lots"}]]
    path.write_text(json.dumps(data))
    with pytest.raises(RunDataError, match="expected a number"):
        memory_claim(path)
