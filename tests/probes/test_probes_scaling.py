"""The scaling probe's options and its parameter restore, without a training run."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

import probes.scaling as scaling
from probes.registry import build_probes
from probes.scaling import DEFAULT_FACTORS, ScalingProbe


def test_options_are_validated_and_factors_sorted():
    assert DEFAULT_FACTORS == (1.0, 0.5, 0.25, 0.125, 0.0625, 0.03125, 0.015625)
    probe = build_probes({"scaling": {"every": 3, "factors": [0.25, 1.0, 0.5]}})[0]
    assert isinstance(probe, ScalingProbe) and probe.factors == (1.0, 0.5, 0.25)
    for bad in ({"every": 0}, {"factors": [1.0]}, {"factors": [1.0, 0.0]}, {"factors": [2.0, 1.0]},
                {"factors": [0.5, 0.5]}, {"epsilon": 1.0}):
        with pytest.raises(ValueError, match="scaling"):
            ScalingProbe(**bad)


def test_parameters_are_restored_exactly_even_when_a_readout_fails(monkeypatch):
    weight = torch.nn.Parameter(torch.randn(4, 3))
    frozen = torch.nn.Parameter(torch.randn(2), requires_grad=False)
    model = torch.nn.Module()
    model.w, model.f = weight, frozen
    ctx = SimpleNamespace(chunked=SimpleNamespace(model=model))
    probe = ScalingProbe(every=1, factors=(1.0, 0.5))
    probe.saved = [weight.detach().clone()]
    probe.before = torch.zeros(1)
    with torch.no_grad():
        weight.add_(0.1)  # the update ω^t → ω^{t+1}
    after = weight.detach().clone()
    monkeypatch.setattr(scaling, "readouts", lambda *a, **k: torch.zeros(1))

    def fail(*args, **kwargs):
        assert torch.allclose(weight, probe_start + 0.5 * (after - probe_start))  # ω^t + c·Δω at c = ½
        raise RuntimeError("readout failed")

    probe_start = probe.saved[0]
    monkeypatch.setattr(scaling, "readouts_now", fail)
    with pytest.raises(RuntimeError, match="readout failed"):
        probe.after_step(ctx, 0, {})
    assert torch.equal(weight, after) and probe.saved is None
