"""Probes on short real runs (embedded model, K = 2): they change nothing, φ_t checks out
against the stored distributions, reverse-KL ratios are finite, resume equals uninterrupted."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from run_probes import training_view  # and the test-only probe "crash_once"
from safetensors.torch import load_file

from probes.readout_probe import ReadoutStore
from zerolock_theory.app.workflows.runs import probed_train as train
from zerolock_theory.config import TrainConfig
from zerolock_theory.jsonio import read_records
from zerolock_theory.records import (
    MINIMIZER_INITIAL,
    SCALING,
    SCALING_STEP,
    STABILITY,
    STABILITY_FLAG,
)
from zerolock_theory.training.loop import TIMING_KEYS

MODEL = "embedded"
N, K, STEPS, ALPHA = 32, 2, 5, 0.5
ALL_PROBES = {
    "readouts": {"mode": "full", "dtype": "float32", "n_positions": N},
    "stability": {"n_positions": N, "check_autograd": True},
    "minimizers": {"n_positions": N},
    "gradients": {"n_positions": N, "every": 2},
    "scaling": {"n_positions": N, "every": 2, "factors": [1.0, 0.5, 0.25]},
    "proof": {"n_positions": N, "smoothness_every": 2},
}


def _config(probes: dict[str, Any], steps: int = STEPS, **method: Any) -> TrainConfig:
    return TrainConfig.from_dict({
        "model": {"path": MODEL, "chunks": K, "device": "cpu", "lora": {"rank": 4}},
        "data": {"seq_len": 32, "batch_size": 2, "eval_batches": 1},
        "method": {"alpha": ALPHA, **method},
        "run": {"steps": steps, "eval_every": 5, "checkpoint_every": 3, "progress": False},
        "probes": probes,
    })


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("probe_runs")
    train(_config(ALL_PROBES), root / "all")
    train(_config({}), root / "none")
    return {"all": root / "all", "none": root / "none"}


def test_probes_change_nothing(runs):
    for step in (3, STEPS):
        name = f"checkpoints/step_{step:08d}/adapters.safetensors"
        with_probes, without = load_file(runs["all"] / name), load_file(runs["none"] / name)
        assert with_probes.keys() == without.keys()
        for key in with_probes:
            assert torch.equal(with_probes[key], without[key]), key
    records = read_records(runs["all"] / "metrics.jsonl")
    assert training_view(records) == training_view(read_records(runs["none"] / "metrics.jsonl"))
    assert all("probe/stability/implemented/total/phi" in r for r in records)
    assert all("probe/minimizer/2/gap" in r for r in records)
    assert [r["step"] for r in records if "probe/gradient/global_sq" in r] == [0, 2, 4]
    assert [r["step"] for r in records if "probe/gradient/2/cos" in r] == [0, 2, 4]
    assert [r["step"] for r in records if "probe/scaling/implemented/c=0.25/phi" in r] == [0, 2, 4]
    assert all(isinstance(r["probe/proof/paper/drift"], float) for r in records)
    assert [r["step"] for r in records if "probe/proof/implemented/smoothness" in r] == [0, 2, 4]
    # the random-direction baseline moved the parameters too, and was undone bit for bit
    assert [r["step"] for r in records if "probe/scaling/implemented/random/c=0.25/phi" in r] == [0, 2, 4]


def test_scaling_probe_terms(runs):
    """c = 1 is the stability probe's step; q(c) shrinks with c; φ′ = φ(c_min)/c_min."""
    records = [r for r in read_records(runs["all"] / "metrics.jsonl") if "probe/scaling/paper/c=1.0/phi" in r]
    assert len(records) == 3
    for r in records:
        for obj in ("paper", "implemented"):
            for name in ("phi", "q", "ratio"):
                # the same step through two float64 paths (probabilities vs log-probabilities): equal to rounding
                assert r[SCALING.key(obj, 1.0, name)] == pytest.approx(r[STABILITY.key(obj, "total", name)], rel=1e-12)
            q = [r[SCALING.key(obj, c, "q")] for c in (1.0, 0.5, 0.25)]
            assert q[0] > q[1] > q[2] > 0
            # second order in c: q(c)/c² is about constant for small steps
            assert q[1] / 0.25 == pytest.approx(q[0], rel=0.2) and q[2] / 0.0625 == pytest.approx(q[1] / 0.25, rel=0.2)
            phi = r[SCALING.key(obj, 0.25, "phi")]
            assert r[SCALING_STEP.key(obj, "phi_prime")] == pytest.approx(phi / 0.25, rel=1e-12)
            assert r[SCALING_STEP.key(obj, "defined")] is True
            # the random baseline: its own point at every c (c = 1 included), same shapes of q(c)
            rq = [r[SCALING.key(obj, c, "q", "random")] for c in (1.0, 0.5, 0.25)]
            assert rq[0] > rq[1] > rq[2] > 0 and rq[1] / 0.25 == pytest.approx(rq[0], rel=0.2)
            assert r[SCALING.key(obj, 1.0, "phi", "random")] != r[SCALING.key(obj, 1.0, "phi")]
            random_phi = r[SCALING.key(obj, 0.25, "phi", "random")]
            assert r[SCALING_STEP.key(obj, "phi_prime", "random")] == pytest.approx(random_phi / 0.25, rel=1e-12)
            assert r[SCALING_STEP.key(obj, "defined", "random")] is True


def _phi_by_hand(before: np.ndarray, after: np.ndarray, labels: np.ndarray, epsilon: float, objective: str):
    """φ_k = Σ_{n,v} ∂R/∂p_{k-1}·Δp_{k-1} with docs/MATH.md's closed forms, float64, per chunk."""
    vocab = before.shape[-1]
    p_y = np.full((len(labels), vocab), epsilon / vocab)
    p_y[np.arange(len(labels)), labels] += 1.0 - epsilon
    phis = []
    for k in range(1, K + 1):
        prev, nxt, p_k = before[k - 1], after[k - 1], before[k]
        if objective == "implemented":
            m = ALPHA * p_y + (1 - ALPHA) * prev
            grad = (1 - ALPHA) * (np.log(m / p_k) + 1.0)
        else:
            g = p_y**ALPHA * prev ** (1 - ALPHA)
            g /= g.sum(-1, keepdims=True)
            grad = (1 - ALPHA) * (g - p_k) / prev
        phis.append(float((grad / len(labels) * (nxt - prev)).sum()))
    return phis


def test_online_phi_equals_recomputation_from_stored_full_distributions(runs):
    store = ReadoutStore(runs["all"] / "readouts", verify=True)
    assert store.steps == list(range(STEPS + 1)) and store.mode == "full" and not store.torn
    batch = json.loads((runs["all"] / "probe_batch.json").read_text())
    labels = np.array(batch["labels"]).reshape(-1)
    labels = labels[labels != -100]
    assert len(labels) == N == batch["n_positions"]
    records = read_records(runs["all"] / "metrics.jsonl")
    # Proposition 1's step-0 baseline: CE_k at the untrained ω^0, logged once, with step 0
    untrained = store.dense(0).astype(np.float64)
    for k in range(K + 1):
        ce = float(-np.log(untrained[k, np.arange(N), labels]).mean())
        assert records[0][MINIMIZER_INITIAL.key(k, "ce")] == pytest.approx(ce, rel=1e-5)
    assert all(MINIMIZER_INITIAL.key(k, "gap") in records[0] for k in range(1, K + 1))
    assert not any("probe/minimizer/initial/1/ce" in r for r in records[1:])
    for t, record in enumerate(records):
        before, after = store.dense(t).astype(np.float64), store.dense(t + 1).astype(np.float64)
        for objective, eps in (("implemented", 0.0), ("paper", 0.1)):
            phis = _phi_by_hand(before, after, labels, eps, objective)
            got = [record[STABILITY.key(objective, k, "phi")] for k in range(1, K + 1)]
            # tolerance: the store holds float32 probabilities, the probe used exp in float64
            np.testing.assert_allclose(got, phis, rtol=1e-3, atol=1e-12, err_msg=f"{objective} step {t}")
            total = record[STABILITY.key(objective, "total", "phi")]
            assert total == pytest.approx(sum(phis), rel=1e-3)
            q = float(((after[:-1] - before[:-1]) ** 2).sum()) / N  # a per-position mean
            assert record[STABILITY.key(objective, "total", "q")] == pytest.approx(q, rel=1e-3)
            # the closed-form gradient equals autograd, in the run
            for k in [*range(1, K + 1), "total"]:
                auto = record[STABILITY.key(objective, k, "phi_autograd")]
                assert auto == pytest.approx(record[STABILITY.key(objective, k, "phi")], rel=1e-4, abs=1e-15)
        assert record["probe/stability/implemented/1/ratio"] is None  # 0/0: p_0 is the frozen embedding readout
        assert record["probe/stability/implemented/1/q"] == 0.0


def test_reverse_run_gives_finite_ratios_for_both_objectives(tmp_path):
    probes = {"stability": {"n_positions": N}, "minimizers": {"n_positions": N}}
    train(_config(probes, steps=3, direction="reverse", epsilon=0.1), tmp_path / "rev")
    records = read_records(tmp_path / "rev" / "metrics.jsonl")
    assert len(records) == 3
    for record in records:
        for objective in ("paper", "implemented"):
            assert record[STABILITY_FLAG.key(objective, "defined")] is True
            for k in (2, "total"):
                ratio = record[STABILITY.key(objective, k, "ratio")]
                assert isinstance(ratio, float) and math.isfinite(ratio) and ratio >= 0.0
        assert record["probe/minimizer/2/gap"] == record["probe/minimizer/2/kl_p_g"]


def test_resume_with_probes_equals_uninterrupted(runs, tmp_path, capsys):
    out = tmp_path / "resumed"
    config = _config({**ALL_PROBES, "crash_once": {"at_step": 3}})
    with pytest.raises(RuntimeError, match="simulated crash"):
        train(config, out)  # crashes after the checkpoint of step 3, with record 4 stored
    data = sorted((out / "readouts").glob("step-*.parquet"))[-1]
    with open(data, "r+b") as fh:  # and tear the last shard
        fh.truncate(data.stat().st_size - 100)
    with pytest.warns(RuntimeWarning, match="unreadable"):
        assert ReadoutStore(out / "readouts").torn
    capsys.readouterr()
    train(config, out, resume=True)
    assert "dropped a torn tail" in capsys.readouterr().out
    reference = read_records(runs["all"] / "metrics.jsonl")
    resumed = read_records(out / "metrics.jsonl")
    strip = [{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in (*reference, *resumed)]
    assert strip[: len(reference)] == strip[len(reference) :]
    for step in range(STEPS + 1):
        ours, ref = ReadoutStore(out / "readouts"), ReadoutStore(runs["all"] / "readouts")
        assert all(np.array_equal(a, ref.get(step)[k]) for k, a in ours.get(step).items())
    name = f"checkpoints/step_{STEPS:08d}/adapters.safetensors"
    a, b = load_file(runs["all"] / name), load_file(out / name)
    assert all(torch.equal(a[key], b[key]) for key in a)
