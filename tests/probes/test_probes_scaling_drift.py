"""The scaling probe's drift(c) and antithetic direction on short real runs (embedded model, K = 2).

drift(c) = R(p(c); p̃(c)) − R(p(c); p̃^t) is checked against a direct evaluation by a test-only
probe that reloads ω^t + c·Δω_t itself; drift(c)/c and φ(c)/c meet as c → 0; the antithetic
direction −u_t mirrors u_t to first order; training is unaffected; resume logs the same values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest
import torch
from run_probes import training_view  # and the test-only probe "crash_once"
from safetensors.torch import load_file

import probes.scaling as scaling
from probes.readout_pass import label_targets, probe_batch, readouts_now, smoothing_for_g
from probes.registry import build_probes, register
from zerolock_theory.app.workflows.runs import probed_train as train
from zerolock_theory.config import TrainConfig
from zerolock_theory.jsonio import read_records
from zerolock_theory.records import SCALING, SCALING_DIRECTIONS, SCALING_STEP
from zerolock_theory.theory.stability import chunk_divergence
from zerolock_theory.training.loop import TIMING_KEYS

N, K, STEPS, ALPHA, EVERY = 32, 2, 4, 0.5, 2
# c_min = 1/16: below about 1/32 the float32 forward's rounding is a visible part of φ(c) of the
# random directions on this model (their φ′ is small), which would blur the O(c) checks
FACTORS = (1.0, 0.5, 0.25, 0.125, 0.0625)
OBJECTIVES = ("paper", "implemented")
DIRECTIONS = ("actual", "random", "antithetic")
SCALING_PROBE = {"n_positions": N, "every": EVERY, "factors": list(FACTORS)}


def _check_key(objective: str, c: float) -> str:
    return f"probe/drift_check/{objective}/c={c!r}/drift"


@register("drift_check")
@dataclass
class DriftCheck:
    """Test-only probe: drift(c) of the actual update by definition, at the scaling probe's steps.

    Keeps ω^t itself, loads ω^t + c·Δω_t (ω^{t+1} exactly at c = 1, as the probe does),
    recomputes the readouts and evaluates R chunk by chunk with ``chunk_divergence``.
    """

    name: ClassVar[str] = "drift_check"
    every: int = EVERY
    n_positions: int = N
    seed: int | None = None  # the shared probe settings fill these as for the scaling probe
    epsilon: float = 0.1

    def on_start(self, ctx) -> None:
        self.start = None

    def before_step(self, ctx, step) -> None:
        params = [p for p in ctx.chunked.model.parameters() if p.requires_grad]
        self.start = None if step % self.every else [p.detach().clone() for p in params]

    def after_step(self, ctx, step, metrics) -> dict[str, Any]:
        if self.start is None:
            return {}
        params = [p for p in ctx.chunked.model.parameters() if p.requires_grad]
        start, final = self.start, [p.detach().clone() for p in params]
        self.start = None
        labels = probe_batch(ctx, self.n_positions, self.seed).targets
        method = ctx.config.method
        eps = {"paper": smoothing_for_g(method.epsilon, self.epsilon), "implemented": method.epsilon}

        def load(weights: list[torch.Tensor]) -> torch.Tensor:
            with torch.no_grad():
                for p, w in zip(params, weights, strict=True):
                    p.copy_(w)
            return readouts_now(ctx, self.n_positions, self.seed).double().exp()

        out: dict[str, Any] = {}
        try:
            before = load(start)
            for c in FACTORS:
                at = load(final if c == 1.0 else [w0 + c * (w1 - w0) for w0, w1 in zip(start, final, strict=True)])
                for objective in OBJECTIVES:
                    p_y = label_targets(labels, at.shape[-1], eps[objective])

                    def r(upstream: torch.Tensor, at: torch.Tensor = at, p_y: torch.Tensor = p_y,
                          objective: str = objective) -> float:
                        return sum(float(chunk_divergence(upstream[k - 1], at[k], p_y, ALPHA, objective).mean())
                                   for k in range(1, K + 1))

                    out[_check_key(objective, c)] = r(at) - r(before)
        finally:
            load(final)
        return out

    def on_checkpoint(self, ctx, step) -> None:
        pass

    def on_end(self, ctx) -> None:
        self.start = None


def _config(probes: dict[str, Any], steps: int = STEPS) -> TrainConfig:
    return TrainConfig.from_dict({
        "model": {"path": "embedded", "chunks": K, "device": "cpu", "lora": {"rank": 4}},
        "data": {"seq_len": 32, "batch_size": 2, "eval_batches": 1},
        "method": {"alpha": ALPHA},
        "run": {"steps": steps, "eval_every": steps, "checkpoint_every": 2, "progress": False},
        "probes": probes,
    })


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("scaling_drift")
    train(_config({"scaling": SCALING_PROBE, "drift_check": {}}), root / "checked")
    train(_config({"scaling": {**SCALING_PROBE, "antithetic": False}}), root / "off")
    train(_config({}), root / "plain")
    return {name: root / name for name in ("checked", "off", "plain")}


def _probed(run: Path) -> list[dict[str, Any]]:
    return [r for r in read_records(run / "metrics.jsonl") if SCALING.key("paper", 1.0, "phi") in r]


def test_keys_and_options():
    assert SCALING_DIRECTIONS == ("actual", "random", "antithetic")
    assert SCALING.key("paper", 0.5, "drift", "antithetic") == "probe/scaling/paper/antithetic/c=0.5/drift"
    assert SCALING_STEP.key("implemented", "phi_prime", "antithetic") == "probe/scaling/implemented/antithetic/phi_prime"
    probe = build_probes({"scaling": {}})[0]
    assert probe.random_baseline and probe.antithetic


def _by_definition(before: torch.Tensor, after: torch.Tensor, p_y: torch.Tensor, alpha: float,
                   objective: str) -> float | None:
    """R(p(c); p̃(c)) − R(p(c); p̃^t) with ``chunk_divergence``, chunk by chunk; None where not finite."""
    def r(upstream: torch.Tensor) -> torch.Tensor:
        return sum(chunk_divergence(upstream[k - 1], after[k], p_y, alpha, objective).mean()
                   for k in range(1, after.shape[0]))

    value = float(r(after) - r(before))
    return value if math.isfinite(value) else None


def _draw(gen: torch.Generator, zeros: float) -> torch.Tensor:
    """Readouts [K+1 = 3, N = 2, V = 5] with each entry exactly 0 with probability ``zeros``."""
    x = torch.rand(3, 2, 5, generator=gen, dtype=torch.float64)
    x = torch.where(torch.rand(x.shape, generator=gen) < zeros, torch.zeros_like(x), x)
    x[..., 0] += 1e-3  # no all-zero row
    return x / x.sum(-1, keepdim=True)


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.5, 1.0])
@pytest.mark.parametrize("objective", OBJECTIVES)
def test_drift_helper_follows_the_definition_with_zeros_and_infinities(objective, alpha):
    """Exact zeros in readouts, outputs and a one-hot p_y make some KLs +inf: the drift is then
    null exactly where the definition's difference is not finite, and equal to it elsewhere."""
    gen = torch.Generator().manual_seed(1)
    seen = {"finite": 0, "null": 0}
    for trial in range(40):
        zeros = 0.15 * (trial % 3)
        before, scaled = _draw(gen, zeros), {c: _draw(gen, zeros) for c in (1.0, 0.5, 0.25)}
        labels = torch.randint(0, 5, (2,), generator=gen)
        p_y = label_targets(labels, 5, 0.0 if trial % 2 else 0.2)
        logged = scaling.Drift(before, p_y, alpha, objective).values(list(scaled.values()))
        for c, value in zip(scaled, logged, strict=True):
            want = _by_definition(before, scaled[c], p_y, alpha, objective)
            seen["null" if want is None else "finite"] += 1
            if want is None:
                assert value is None, (trial, c)
            else:
                assert value == pytest.approx(want, rel=1e-9, abs=1e-13), (trial, c)
    assert seen["finite"] > 0
    if alpha < 1.0 or objective == "implemented":
        assert seen["null"] > 0  # the infinite cases were exercised


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.5, 0.9, 1.0])
@pytest.mark.parametrize("epsilon", [0.0, 0.1])
@pytest.mark.parametrize("objective", OBJECTIVES)
def test_the_short_form_equals_the_definition_on_peaked_readouts(objective, epsilon, alpha):
    """Positive readouts take the regrouped sums (``Drift``'s short form, alone or beside the other
    objective's, log p shared, the
    one-hot H(m) at ε = 0): the definition's values to summation order, from small moves (c = 1e-4)
    to large, on peaked readouts over a 3000-word vocabulary."""
    gen = torch.Generator().manual_seed(int(100 * alpha + 10 * epsilon))
    logits = 4.0 * torch.randn(3, 6, 3000, generator=gen, dtype=torch.float64)
    before = torch.softmax(logits, -1)
    scaled = {c: torch.softmax(logits + c * torch.randn(logits.shape, generator=gen, dtype=torch.float64), -1)
              for c in (1.0, 0.1, 1e-4)}
    p_y = label_targets(torch.randint(0, 3000, (6,), generator=gen), 3000, epsilon)
    drift = scaling.Drift(before, p_y, alpha, objective)
    assert drift.short == (objective == "implemented" or alpha == 0.0 or epsilon > 0.0)  # p_y's zeros: the long form
    assert objective == "paper" or (drift.labels is not None) == (epsilon == 0.0 and alpha < 1.0)
    points = list(scaled.values())
    other = scaling.Drift(before, p_y, alpha, "paper" if objective == "implemented" else "implemented")
    for logged in (drift.values(points), scaling.drift_values([other, drift], points)[1]):
        for p, value in zip(points, logged, strict=True):
            assert value == pytest.approx(_by_definition(before, p, p_y, alpha, objective), rel=1e-9, abs=1e-13)


def test_drift_takes_a_broadcast_p_y_and_no_points():
    """p_y as [1, V] or [V] reads as its [N, V] expansion (the one-hot short form included); no
    points give no values (docs/breaks/scaling_drift.md)."""
    gen = torch.Generator().manual_seed(5)
    before = torch.softmax(torch.randn(3, 4, 9, generator=gen, dtype=torch.float64), -1)
    point = torch.softmax(torch.randn(3, 4, 9, generator=gen, dtype=torch.float64), -1)
    row = label_targets(torch.tensor([2]), 9, 0.0)
    for p_y in (row, row[0]):
        for objective in OBJECTIVES:
            value = scaling.Drift(before, p_y, 0.5, objective).values([point])[0]
            want = _by_definition(before, point, row.expand(4, 9), 0.5, objective)
            assert (value is None and want is None) or value == pytest.approx(want, rel=1e-9, abs=1e-13)
    assert scaling.drift_values([scaling.Drift(before, row, 0.5, "paper")], []) == [[]]


def test_drift_equals_a_direct_evaluation(runs):
    records = _probed(runs["checked"])
    assert [r["step"] for r in records] == list(range(0, STEPS, EVERY))
    for r in records:
        for objective in OBJECTIVES:
            for c in FACTORS:
                logged, direct = r[SCALING.key(objective, c, "drift")], r[_check_key(objective, c)]
                assert isinstance(logged, float) and math.isfinite(logged)
                # The same readouts (same parameters, same forward). ``implemented`` is the same
                # chunk_divergence arithmetic (equal here); ``paper`` drops Σ p_k log p_k from both
                # KLs, which the direct difference carries: that and the summation order move each R
                # (a sum of K·N·V = 2.6e5 float64 terms, R ≈ 1-10 nats) by ≲ 1e-14, far below 1e-12.
                assert logged == pytest.approx(direct, rel=1e-9, abs=1e-12), (r["step"], objective, c)


def _value(r: dict[str, Any], objective: str, c: float, name: str, direction: str) -> float:
    return r[SCALING.key(objective, c, name, direction)]


def _mirror_gap(r: dict[str, Any], objective: str, c: float) -> float:
    """|φ(c; u) + φ(c; −u)| / |φ(c; u)|: the relative difference of φ(c; −u)/c from −φ(c; u)/c."""
    plus, minus = (_value(r, objective, c, "phi", d) for d in ("random", "antithetic"))
    return abs(plus + minus) / abs(plus)


def test_drift_meets_phi_as_c_shrinks_and_the_antithetic_direction_mirrors(runs):
    c_min = FACTORS[-1]
    for r in _probed(runs["checked"]):
        for objective in OBJECTIVES:
            for direction in DIRECTIONS:
                # drift(c)/c − φ(c)/c = O(c): the gradient of R at p(c) vs at p(0); measured ≈ c_min·(value at 1)
                gap = [(_value(r, objective, c, "drift", direction) - _value(r, objective, c, "phi", direction)) / c
                       for c in FACTORS]
                assert abs(gap[-1]) < 4 * c_min * abs(gap[0]), (r["step"], objective, direction, gap)
                assert r[SCALING_STEP.key(objective, "defined", direction)] is True
                assert r[SCALING_STEP.key(objective, "phi_prime", direction)] == pytest.approx(
                    _value(r, objective, c_min, "phi", direction) / c_min, rel=1e-12)
                assert r[SCALING_STEP.key(objective, "q_second", direction)] == pytest.approx(
                    _value(r, objective, c_min, "q", direction) / c_min**2, rel=1e-12)
            # φ(c; −u)/c = −φ(c; u)/c + O(c): relative difference ≈ c·A with A ≈ its value at c = 1
            # (0.01 … 0.7 here); the floor 0.1 on A covers float32 rounding in the forward when A is tiny
            low, high = _mirror_gap(r, objective, c_min), _mirror_gap(r, objective, 1.0)
            assert low <= 2 * c_min * max(high, 0.1), (r["step"], objective, low, high)
            prime = [r[SCALING_STEP.key(objective, "phi_prime", d)] for d in ("random", "antithetic")]
            assert (prime[0] > 0) != (prime[1] > 0)  # exactly one of ±u has φ′ > 0
            # the same u_t: q(c) nearly equal for ±u (q is even in the direction to leading order)
            for c in FACTORS:
                q_plus, q_minus = (_value(r, objective, c, "q", d) for d in ("random", "antithetic"))
                assert q_minus == pytest.approx(q_plus, rel=0.5)


def test_antithetic_direction_leaves_training_and_the_other_directions_unchanged(runs):
    records, off, plain = (read_records(runs[n] / "metrics.jsonl") for n in ("checked", "off", "plain"))
    assert training_view(records) == training_view(plain) == training_view(off)
    for step in (2, STEPS):
        name = f"checkpoints/step_{step:08d}/adapters.safetensors"
        probed, without = load_file(runs["checked"] / name), load_file(runs["plain"] / name)
        assert probed.keys() == without.keys()
        assert all(torch.equal(probed[key], without[key]) for key in probed), step
    antithetic = "probe/scaling/paper/antithetic/"
    assert [r["step"] for r in records if SCALING.key("paper", 1.0, "drift", "antithetic") in r] == [0, 2]
    for with_, without in zip(records, off, strict=True):
        scaled = {k: v for k, v in with_.items() if k.startswith("probe/scaling/")}
        assert not any(k.startswith(antithetic) for k in without)
        assert {k: v for k, v in scaled.items() if "/antithetic/" not in k} == {
            k: v for k, v in without.items() if k.startswith("probe/scaling/")}


def test_antithetic_needs_the_random_baseline(tmp_path):
    train(_config({"scaling": {**SCALING_PROBE, "random_baseline": False, "antithetic": True}}, steps=1), tmp_path)
    (record,) = read_records(tmp_path / "metrics.jsonl")
    assert SCALING.key("paper", 1.0, "drift") in record
    assert not any("/random/" in k or "/antithetic/" in k for k in record)


def test_resume_logs_the_same_drift_and_antithetic_values(runs, tmp_path):
    out = tmp_path / "resumed"
    config = _config({"scaling": SCALING_PROBE, "drift_check": {}, "crash_once": {"at_step": 3}})
    with pytest.raises(RuntimeError, match="simulated crash"):
        train(config, out)  # dies in step 3 after the checkpoint of step 2: step 2 (probed) runs again
    train(config, out, resume=True)
    reference, resumed = (read_records(run / "metrics.jsonl") for run in (runs["checked"], out))
    strip = [{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in (*reference, *resumed)]
    assert strip[: len(reference)] == strip[len(reference) :]
    assert SCALING.key("implemented", FACTORS[-1], "drift", "antithetic") in resumed[2]
    assert SCALING_STEP.key("implemented", "phi_prime", "antithetic") in resumed[2]
