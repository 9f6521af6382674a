"""method.alpha as one number or one per chunk, and the other diagnosis settings: one-line errors."""

from __future__ import annotations

import pytest

from zerolock_theory.config import MethodConfig, TrainConfig, alpha_of, one_alpha


def _config(**method) -> TrainConfig:
    return TrainConfig.from_dict({"model": {"chunks": 3}, "method": method})


def test_alpha_list_reads_per_chunk_and_scalar_is_every_chunks():
    config = _config(alpha=[0.5, 0.5, 1])
    assert [alpha_of(config.method, k) for k in (1, 2, 3)] == [0.5, 0.5, 1.0]
    assert [alpha_of(MethodConfig(alpha=0.3), k) for k in (1, 2, 3)] == [0.3, 0.3, 0.3]
    assert one_alpha(_config(alpha=[0.4, 0.4, 0.4]).method, "x") == 0.4


@pytest.mark.parametrize(("method", "words"), [
    ({"alpha": [0.5, 1.0]}, "needs model.chunks = 3 entries"),
    ({"alpha": [0.5, 0.0, 1.0]}, "(0, 1]"),
    ({"alpha": [0.5, 1.5, 1.0]}, "(0, 1]"),
    ({"alpha": 1.5}, "[0, 1]"),
    ({"frozen_chunks": [4]}, "beyond model.chunks"),
    ({"frozen_chunks": [1, 2, 3]}, "nothing would train"),
    ({"loss_weights": [1, 1, 1]}, "set method.detach = false"),
    ({"detach": False, "loss_weights": [0, 0, 0]}, "not all 0"),
    ({"detach": False, "loss_weights": [1, 1]}, "needs model.chunks = 3"),
    ({"name": "backprop", "detach": False}, "nothing to detach"),
])
def test_bad_settings_raise_one_line(method, words):
    with pytest.raises(ValueError) as info:
        _config(**method)
    assert words in str(info.value) and "\n" not in str(info.value)


def test_one_alpha_refuses_different_alphas():
    with pytest.raises(ValueError, match="needs one method.alpha for every chunk"):
        one_alpha(_config(alpha=[0.5, 0.5, 1.0]).method, "the stability probe")
