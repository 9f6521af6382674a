"""The throughput row (analyses/systems/throughput.py) on synthetic prediction files."""

from __future__ import annotations

import json

import pytest

from analyses.io import RunDataError
from analyses.results import load_result
from analyses.systems.throughput import (
    SETTING,
    THROUGHPUT_OUTCOMES,
    ThroughputPrediction,
    throughput_outcome,
    throughput_prediction,
)


def _row(model: str, K: int, m: int, ratio: float) -> dict:
    return {"model": model, "chunks": K, "micro_batches": m, "ratio": ratio, "bubble": ratio / 0.9, "work": 0.9,
            "readout_share": 0.1, "period_1f1b_s": 1.0, "period_zerolock_s": 1.0 / ratio}


def _write(tmp_path, at_setting: float, smol: list[float]) -> str:
    rows = [_row(SETTING["model"], SETTING["chunks"], SETTING["micro_batches"], at_setting),
            _row(SETTING["model"], 2, 2, 1.5)]
    rows += [_row("SmolLM2-135M", K, 4, r) for K, r in zip((2, 3, 5), smol, strict=True)]
    rows.append(_row("SmolLM2-135M", 8, 4, 3.0))  # outside the real model's K: ignored for the sign
    path = tmp_path / "schedule_prediction.json"
    path.write_text(json.dumps({"variants": {"measured_rates": rows, "flops_only": rows[:1]}}))
    return str(path)


@pytest.mark.parametrize("ratio", [1.20, 1.049, 1.03, 1.0, 0.8])
def test_the_row_is_a_map_whatever_the_ratios(tmp_path, ratio) -> None:
    """The assumed setting's cell no longer decides: every predicted map reads "a prediction, not a verdict"."""
    result = throughput_prediction(_write(tmp_path, ratio, [0.9, 0.8, 0.7]))
    assert result.outcome == THROUGHPUT_OUTCOMES[0] == "a prediction, not a verdict"
    assert result.at_setting is not None and result.at_setting.ratio == ratio  # described, on its own model's map
    assert result.setting_source.startswith("assumed")
    assert throughput_outcome([]) == "not measured"


def test_each_model_reads_its_own_cells(tmp_path) -> None:
    result = throughput_prediction(_write(tmp_path, 1.1, [0.9, 1.05, 1.0]), model="/models/HuggingFaceTB/SmolLM2-135M")
    assert result.model == "SmolLM2-135M"
    regions = {g.model: g for g in result.regions}
    assert regions["SmolLM2-135M"].cells == 4 and regions["SmolLM2-135M"].reaching == [[3, 4], [8, 4]]
    assert regions["Llama-3-8B"].reaching == [[4, 8], [2, 2]] and regions["Llama-3-8B"].cells == 2
    from analyses.systems.claim import _throughput_short
    from analyses.verdict import Evidence
    text = _throughput_short(Evidence("prediction", result=result))
    assert "SmolLM2-135M" in text and "Llama" not in text  # the SmolLM2 section prints no Llama-3-8B cell
    assert throughput_prediction(_write(tmp_path, 1.1, [1, 1, 1]), model="embedded").model == ""


@pytest.mark.parametrize(("smol", "sign"), [([0.9, 0.8, 0.7], "lower"), ([1.1, 1.2, 1.01], "higher"),
                                            ([1.1, 0.9, 1.2], "mixed")])
def test_real_model_sign(tmp_path, smol, sign) -> None:
    result = throughput_prediction(_write(tmp_path, 1.1, smol))
    assert result.real_model_sign == sign
    assert [c.chunks for c in result.real_model_cells] == [2, 3, 5]


def test_share_reaching_the_claim_and_round_trip(tmp_path) -> None:
    result = throughput_prediction(_write(tmp_path, 1.1, [0.9, 1.05, 1.0]))
    assert result.share_reaching_claim == pytest.approx(4 / 6)  # 1.1, 1.5, 1.05, 3.0 of six cells
    assert ThroughputPrediction.from_json(result.to_json()) == result
    assert load_result(result.to_json()) == result


def test_setting_outside_the_grid_is_still_a_map(tmp_path) -> None:
    result = throughput_prediction(_write(tmp_path, 1.1, [1, 1, 1]), setting={"model": "x", "chunks": 2,
                                                                             "micro_batches": 2})
    assert (result.outcome, result.at_setting) == ("a prediction, not a verdict", None)
    assert result.setting_source == "given"


def test_validation_errors_are_carried(tmp_path) -> None:
    (tmp_path / "schedule_validation.json").write_text(json.dumps({"validation": [{"error": 0.1}, {"error": -0.2}]}))
    result = throughput_prediction(_write(tmp_path, 1.1, [1, 1, 1]), validation=tmp_path)
    assert result.validation_errors == [0.1, -0.2]


@pytest.mark.parametrize(("text", "message"), [
    ("{", "invalid JSON"),
    ('{"variants": {}}', "no prediction rows"),
    ('{"variants": {"measured_rates": [{"model": "a"}]}}', "needs model"),
    ('{"variants": {"measured_rates": [{"model": "a", "chunks": 2, "micro_batches": 2, "ratio": -1, '
     '"bubble": 1, "work": 1, "readout_share": 0}]}}', "ratio must be > 0"),
])
def test_malformed_prediction_file(tmp_path, text, message) -> None:
    (tmp_path / "schedule_prediction.json").write_text(text)
    with pytest.raises(RunDataError, match=message):
        throughput_prediction(tmp_path)
    with pytest.raises(RunDataError, match="no such file"):
        throughput_prediction(tmp_path / "absent.json")
