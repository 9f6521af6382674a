"""Systems ratios from systems.json (analyses.systems)."""

from __future__ import annotations

import json

import pytest
from synthetic_runs import write_systems

from analyses.io import RunDataError
from analyses.systems import systems_comparison


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
