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


def test_random_direction_has_the_update_norm_per_chunk_and_is_reproducible():
    gen = torch.Generator().manual_seed(0)
    deltas = [torch.randn(3, 4, generator=gen), torch.randn(5, generator=gen), torch.zeros(2), torch.randn(6, generator=gen)]
    groups = [1, 1, 2, 0]
    u = scaling.random_direction(deltas, groups, scaling.direction_seed(7, 40))
    assert [x.shape for x in u] == [d.shape for d in deltas] and all(x.dtype == torch.float32 for x in u)
    for g in (0, 1, 2):
        norm_u = torch.sqrt(sum(u[i].double().square().sum() for i, x in enumerate(groups) if x == g))
        norm_d = torch.sqrt(sum(deltas[i].double().square().sum() for i, x in enumerate(groups) if x == g))
        assert float(norm_u) == pytest.approx(float(norm_d), rel=1e-6)
    assert torch.equal(u[2], torch.zeros(2))  # a chunk that did not move gets no random move
    again = scaling.random_direction(deltas, groups, scaling.direction_seed(7, 40))
    assert all(torch.equal(a, b) for a, b in zip(u, again, strict=True))
    other = scaling.random_direction(deltas, groups, scaling.direction_seed(7, 41))
    assert not torch.equal(u[0], other[0])
    # not the update itself, nor aligned with it: a fresh direction
    cos = float(torch.nn.functional.cosine_similarity(u[0].flatten(), deltas[0].flatten(), dim=0))
    assert abs(cos) < 0.9
    assert scaling.direction_seed(7, 40) != scaling.direction_seed(8, 40) != scaling.direction_seed(7, 41)


def test_chunk_groups_map_parameters_to_their_chunk():
    a, b, c = (torch.nn.Parameter(torch.zeros(1)) for _ in range(3))
    chunked = SimpleNamespace(num_chunks=2, chunk_parameters=lambda k: [a] if k == 1 else [b])
    assert scaling.chunk_groups(SimpleNamespace(chunked=chunked), [a, b, c]) == [1, 2, 0]
