"""The memory map (``analyses.systems.memory.memory_map``): the ratio against tokens per micro-batch, known answers.

Weights and optimizer state fixed, activations proportional to the tokens of a micro-batch: the
total ratio (w_Z + a_Z·n) / (w_B + a_B·n) falls toward a_Z/a_B, and crosses 0.735 where the
closed form says. The values are the K = 4 embedded-model split measured at 64 tokens
(workflows.memory_map), scaled.
"""

from __future__ import annotations

import json
import math

import pytest

from analyses.registry import ClaimInputs, claim
from analyses.systems.memory import (
    CLAIMED_MEMORY_RATIO,
    MAP_OUTCOMES,
    map_outcome,
    memory_claim,
    memory_map,
)

W_Z, W_B, A_Z, A_B = 6_246_640.0, 4_148_976.0, 52_601.0, 90_428.0  # bytes; activations per token


def _split(weights: float, activations: float) -> list[dict]:
    stage = {"weights": weights, "gradients": 0, "optimizer": 0, "activations": activations, "communication": 0,
             "total": weights + activations}
    return [stage, {**stage, "total": 1.0, "weights": 0.5, "activations": 0.5}]  # the peak stage is the first


def _write(tmp_path, tokens: list[int], with_systems: bool = True):
    points = [{"sequences": n // 32, "tokens": n, "zerolock": _split(W_Z, A_Z * n), "1f1b": _split(W_B, A_B * n)}
              for n in tokens]
    (tmp_path / "memory_map.json").write_text(json.dumps({"K": 4, "micro_batches": 4, "seq_len": 32,
                                                          "points": points}))
    if with_systems:
        entry = {"peak_saved_bytes": [1], "tokens_per_s": 1.0, "memory": [_split(W_Z, A_Z * 64)]}
        base = {**entry, "memory": [_split(W_B, A_B * 64)]}
        (tmp_path / "systems.json").write_text(json.dumps({
            "zerolock": {"4": entry}, "1f1b": {"4": base}, "gpipe": {"4": base},
            "setup": {"micro_batches": 4, "batch_size": 8, "seq_len": 32}}))
    return tmp_path


def test_the_map_names_where_the_ratio_crosses(tmp_path):
    found = memory_map(_write(tmp_path, [512, 64, 128, 256]))
    assert [p.tokens for p in found.points] == [64, 128, 256, 512]
    exact = [(W_Z + A_Z * n) / (W_B + A_B * n) for n in (64, 128, 256, 512)]
    assert [p.total for p in found.points] == pytest.approx(exact)
    assert found.outcome == MAP_OUTCOMES[0] and found.bracket == [128, 256] and found.reaches_from == 256
    # the crossing lies between the two measured points around it (log-linear interpolation)
    n_star = (W_Z - CLAIMED_MEMORY_RATIO * W_B) / (CLAIMED_MEMORY_RATIO * A_B - A_Z)
    assert 128 < n_star < 256 and 128 < found.crossing_tokens < 256
    assert abs(math.log(found.crossing_tokens / n_star)) < 0.1


def test_the_claim_decides_on_the_map_and_names_the_setting(tmp_path):
    result = memory_claim(_write(tmp_path, [64, 128, 256, 512]) / "systems.json")
    assert result.outcome == MAP_OUTCOMES[0] and result.reason == "memory_map"
    assert result.setting == "K = 4, 4 micro-batches of 2 x 32 = 64 tokens"
    verdict = claim("systems_memory").decide(ClaimInputs({"systems_memory": result}, {}))
    assert verdict.outcome == MAP_OUTCOMES[0] and verdict.evidence.p_value is None  # deterministic: no test
    assert "near" in claim("systems_memory").headline(verdict.evidence)


def test_without_a_map_the_one_setting_decides(tmp_path):
    path = _write(tmp_path, [64, 128, 256, 512]) / "systems.json"
    (tmp_path / "memory_map.json").unlink()
    result = memory_claim(path)
    assert result.map is None and result.outcome == "lower than 1F1B, less than the paper claims"


def test_map_outcomes_and_too_few_sizes():
    assert map_outcome([0.7, 0.6, 0.5]) == MAP_OUTCOMES[0]
    assert map_outcome([1.1, 0.8, 0.7]) == MAP_OUTCOMES[0]  # above 1 at the smallest size: the crossing decides
    assert map_outcome([0.9, 0.8, 0.75]) == MAP_OUTCOMES[1]
    assert map_outcome([1.2, 1.1, 1.05]) == MAP_OUTCOMES[1]
    assert map_outcome([0.9, 0.7, 0.8]) == MAP_OUTCOMES[2]
    assert map_outcome([0.9, 0.7]) == "not testable"
