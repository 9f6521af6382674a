"""Probe pieces without a model: registry and recipe, the one-hot paper objective, metrics."""

from __future__ import annotations

import json
import math

import pytest
import torch

from probes.gradients import gradient_metrics
from probes.minimizers import minimizer_metrics
from probes.readout_pass import probe_batch
from probes.registry import build_probes
from probes.stability import StabilityProbe
from zerolock_theory.config import TrainConfig, load_config
from zerolock_theory.jsonio import to_json_value
from zerolock_theory.records import MINIMIZER
from zerolock_theory.theory.divergences import kl, total_variation
from zerolock_theory.theory.targets import (
    arithmetic_target,
    geometric_target,
    label_smooth,
    one_hot,
)
from zerolock_theory.training.hooks import HookContext

V, N, K = 12, 6, 3


class FakeData:
    """Stands in for LMData: one row of N labelled positions."""

    def probe_batch(self, n_positions: int, seed: int) -> dict[str, torch.Tensor]:
        g = torch.Generator().manual_seed(seed)
        ids = torch.randint(0, V, (1, n_positions), generator=g)
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": torch.randint(0, V, (1, n_positions), generator=g)}


def _ctx(tmp_path, **method) -> HookContext:
    config = TrainConfig.from_dict({"method": method})
    return HookContext(config, tmp_path, None, None, FakeData(), torch.device("cpu"))


def _log_p(seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.log_softmax(torch.randn(K + 1, N, V, generator=g), dim=-1)


def test_shipped_recipe_turns_every_probe_on():
    config = load_config("zerolock_theory/recipes/probes.toml")
    assert sorted(p.name for p in build_probes(config.probes)) == ["gradients", "lemma2", "minimizers", "readouts", "stability"]


@pytest.mark.parametrize(
    "table",
    [{"readouts": {"mode": "bogus"}}, {"stability": {"every": 0}}, {"gradients": {"nope": 1}}, {"minimizers": {"epsilon": 0.0}}],
)
def test_bad_probe_options_raise_value_error(table):
    with pytest.raises(ValueError):
        build_probes(table)


def test_probes_must_share_one_probe_batch(tmp_path):
    ctx = _ctx(tmp_path)
    batch = probe_batch(ctx, N)
    assert batch.targets.shape == (N,)
    saved = json.loads((tmp_path / "probe_batch.json").read_text())
    assert saved["n_positions"] == N and saved["labels"] == batch.labels.tolist()
    with pytest.raises(ValueError, match="share one probe batch"):
        probe_batch(ctx, N + 1)


def test_one_hot_paper_objective_is_undefined_with_a_reason_never_nan(tmp_path):
    ctx = _ctx(tmp_path, epsilon=0.0)
    probe_batch(ctx, N)
    out = StabilityProbe(epsilon=0.0, n_positions=N).terms(ctx, _log_p(0).double().exp(), _log_p(1).double().exp())
    assert out["probe/stability/paper/defined"] is False
    assert "one-hot" in out["probe/stability/paper/reason"]
    assert out["probe/stability/paper/total/phi"] == math.inf
    assert to_json_value(out["probe/stability/paper/total/ratio"]) == "inf"
    assert out["probe/stability/implemented/defined"] is True
    values = [v for v in out.values() if isinstance(v, float)]
    assert not any(math.isnan(v) for v in values)
    smoothed = StabilityProbe(epsilon=0.1, n_positions=N).terms(ctx, _log_p(0).double().exp(), _log_p(1).double().exp())
    assert smoothed["probe/stability/paper/defined"] is True
    assert math.isfinite(smoothed["probe/stability/paper/total/ratio"])


def test_gradient_metrics_norms_and_cosines():
    glob = [[torch.tensor([3.0, 0.0]), torch.tensor([4.0])], [torch.tensor([1.0, 1.0])]]
    loc = [[torch.tensor([3.0, 0.0]), torch.tensor([4.0])], [torch.tensor([0.0, 0.0])]]
    out = gradient_metrics(glob, loc)
    assert out["probe/gradient/global_sq"] == pytest.approx(27.0)
    assert out["probe/gradient/1/cos"] == pytest.approx(1.0)
    assert out["probe/gradient/2/cos"] is None  # 0/0: a zero local gradient
    assert out["probe/gradient/local_sq"] == pytest.approx(25.0)
    assert "probe/gradient/1/cos" not in gradient_metrics(glob, None)


@pytest.mark.parametrize("alpha, eps_m, direction", [(0.5, 0.0, "forward"), (0.3, 0.1, "reverse"), (1.0, 0.0, "forward")])
def test_minimizer_metrics_match_the_generic_definitions(alpha, eps_m, direction):
    labels = torch.arange(N) % V
    y = one_hot(labels, V, torch.float64)
    log_p = _log_p(3)
    out = minimizer_metrics(log_p, labels, 0.1, eps_m, alpha, direction)
    for k in range(1, K + 1):
        prev, p_k = log_p[k - 1].double().exp(), log_p[k].double().exp()
        log_g, _ = geometric_target(label_smooth(y, 0.1), prev, alpha)
        m = arithmetic_target(label_smooth(y, eps_m), prev, alpha)
        want = {
            "kl_p_g": kl(p_k.log(), log_g, log_input=True),
            "kl_m_p": kl(m, p_k),
            "tv_g": total_variation(p_k, log_g.exp()),
            "tv_m": total_variation(p_k, m),
            "ce": -p_k.log().gather(-1, labels.unsqueeze(-1)).squeeze(-1),
        }
        for name, value in want.items():
            assert out[MINIMIZER.key(k, name)] == pytest.approx(float(value.mean()), rel=1e-9, abs=1e-12), name
        tracked = "kl_p_g" if direction == "reverse" else "kl_m_p"
        assert out[MINIMIZER.key(k, "gap")] == out[MINIMIZER.key(k, tracked)]


def test_minimizer_metrics_vanish_at_the_tracked_target():
    labels = torch.arange(N) % V
    y = one_hot(labels, V, torch.float64)
    log_p = _log_p(3).double()
    for k in range(1, K + 1):  # make every chunk sit exactly at m_k
        log_p[k] = arithmetic_target(y, log_p[k - 1].exp(), 0.5).log()
    out = minimizer_metrics(log_p, labels, 0.1, 0.0, 0.5, "forward")
    for k in range(1, K + 1):
        assert out[MINIMIZER.key(k, "kl_m_p")] == pytest.approx(0.0, abs=1e-12)
        assert out[MINIMIZER.key(k, "tv_m")] == pytest.approx(0.0, abs=1e-12)
        assert out[MINIMIZER.key(k, "kl_p_g")] > 0 and 0 < out[MINIMIZER.key(k, "tv_g")] <= 1


def test_probes_section_shares_settings_and_keeps_every_per_probe():
    config = TrainConfig.from_dict({"probes": {"n_positions": 64, "seed": 3, "epsilon": 0.2,
                                               "stability": {"every": 2}, "minimizers": {}}})
    assert (config.probe_settings.n_positions, config.probe_settings.seed, config.probe_settings.epsilon) == (64, 3, 0.2)
    built = {p.name: p for p in build_probes(config.probes, config.probe_settings)}
    assert built["stability"].every == 2 and built["minimizers"].every == 1
    assert all((p.n_positions, p.seed, p.epsilon) == (64, 3, 0.2) for p in built.values())
    again = TrainConfig.from_dict(config.to_dict())  # config.json round trip
    assert again == config


def test_old_per_probe_settings_still_load_and_a_mismatch_fails_at_load_time():
    old = TrainConfig.from_dict({"probes": {"stability": {"n_positions": 32}, "minimizers": {"n_positions": 32}}})
    assert old.probe_settings.n_positions == 32 and old.probes == {"stability": {}, "minimizers": {}}
    with pytest.raises(ValueError, match="n_positions must be the same"):
        TrainConfig.from_dict({"probes": {"stability": {"n_positions": 32}, "minimizers": {"n_positions": 64}}})
    with pytest.raises(ValueError, match="probes.n_positions"):
        TrainConfig.from_dict({"probes": {"n_positions": "many"}})
    with pytest.raises(ValueError, match="expected a table"):
        TrainConfig.from_dict({"probes": {"every": 3}})
