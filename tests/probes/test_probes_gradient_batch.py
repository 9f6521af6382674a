"""The ``gradient_batch`` probe: the step's Ĝ_t on the step's own halves, unbiased for ‖∇R‖² over the
training split, one host read of its inner products, and runs that train exactly as without it."""

from __future__ import annotations

import math
import shutil
from itertools import combinations
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from probes.gradient_batch import GradientBatchProbe, batch_inner, draw_halves, own_gradient
from probes.registry import build_probes
from tests.training.test_host_syncs import counted_reads
from zerolock_theory.app.workflows.runs import probed_train
from zerolock_theory.config import LoraSettings, MethodConfig, ModelConfig, OptimConfig, TrainConfig
from zerolock_theory.data import blocks_to_batch
from zerolock_theory.jsonio import read_records
from zerolock_theory.models import ChunkedLM, attach_adapters
from zerolock_theory.records import CHUNK, GRADIENT_BATCH
from zerolock_theory.training.loop import TIMING_KEYS
from zerolock_theory.training.steps import build_step, split_halves

V = 64
CPU = torch.device("cpu")
METHODS = ["zerolock", "backprop"]
DRAWS = 240  # Monte Carlo draws of the expectation test
Z = 4.0  # its tolerance in standard errors of the mean over the draws
MANY = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def _step(tiny_lm, name: str, chunks: int = 2, targets: list[str] | None = None):
    torch.manual_seed(0)
    chunked = ChunkedLM(tiny_lm("llama"), chunks)
    attach_adapters(chunked, LoraSettings(rank=4, init_b_std=0.05, target_modules=targets))
    return build_step(chunked, MethodConfig(name=name, alpha=0.5), OptimConfig(name="sgd", lr=0.1), ModelConfig(), 10)


def _blocks(rows: int, seed: int = 3) -> torch.Tensor:
    return torch.randint(3, V, (rows, 9), generator=torch.Generator().manual_seed(seed))


def _squares(step, batch) -> list[float]:
    """‖g_k‖² per chunk of the step's own gradient on ``batch``."""
    return [sum(float(g.double().pow(2).sum()) for g in b) for b in own_gradient(step)(batch)]


@pytest.mark.parametrize("name", METHODS)
@pytest.mark.parametrize("rows_per_pass", [1, 2, 3])
def test_multiple_one_on_the_steps_halves_is_the_steps_g_hat(tiny_lm, name, rows_per_pass):
    """On the training batch's own halves (multiple = 1), the probe's value is the step's Ĝ_t per chunk,
    whatever the passes (unequal labelled counts between the halves), to 1e-6 of ‖g1_k‖·‖g2_k‖: the
    step takes g2 as the full float32 gradient minus g1, a cancellation at that scale."""
    step = _step(tiny_lm, name)
    batch = blocks_to_batch(_blocks(5))
    batch["labels"][0, -3:] = -100
    halves = split_halves(batch)
    scale = [math.sqrt(a * b) for a, b in zip(*(_squares(step, h) for h in halves), strict=True)]
    got = batch_inner(step, halves, rows_per_pass, CPU)
    metrics = step.train_step(batch, 0)
    for k, value in enumerate(got, start=1):
        assert abs(value - metrics[CHUNK.key(k, "grad_sq_unbiased")]) <= 1e-6 * scale[k - 1]
    assert abs(sum(got) - metrics["train/grad_sq_unbiased"]) <= 1e-6 * sum(scale)


@pytest.mark.parametrize("name", METHODS)
def test_the_average_over_draws_is_the_full_data_squared_norm(tiny_lm, name):
    """E⟨g1, g2⟩ = ‖∇_{ω_k} R‖², R the mean loss over a 10-block training split (exact by autograd on all of
    it), within Z standard errors of the mean over DRAWS draws of two halves of 2 blocks. The tolerance is
    below the bias of a half's squared norm E‖g1‖² − ‖∇R‖² (exact, over all 45 halves), so the test
    tells an unbiased estimate from a squared norm."""
    step, train = _step(tiny_lm, name), _blocks(10)
    exact = torch.tensor(_squares(step, blocks_to_batch(train)), dtype=torch.float64)
    values = torch.tensor([batch_inner(step, draw_halves(train, 4, 0, t), 2, CPU) for t in range(DRAWS)],
                          dtype=torch.float64)
    mean, se = values.mean(0), values.std(0) / math.sqrt(DRAWS)
    assert ((mean - exact).abs() <= Z * se).all(), (mean, exact, se)
    squared = torch.tensor([_squares(step, blocks_to_batch(train[list(pair)])) for pair in combinations(range(10), 2)],
                           dtype=torch.float64).mean(0)
    assert (squared - exact > Z * se).all(), (squared, exact, se)


def test_draws_are_keyed_on_seed_and_t_and_the_halves_on_distinct_rows():
    train = torch.arange(40 * 9).view(40, 9)
    a, b = draw_halves(train, 12, 5, 8), draw_halves(train, 12, 5, 8)
    assert all(torch.equal(x[key], y[key]) for x, y in zip(a, b, strict=True) for key in x)
    assert [h["input_ids"].shape[0] for h in a] == [6, 6]
    assert not torch.equal(a[0]["input_ids"], draw_halves(train, 12, 5, 16)[0]["input_ids"])
    assert not torch.equal(a[0]["input_ids"], draw_halves(train, 12, 6, 8)[0]["input_ids"])
    for half in a:  # without replacement within a half
        assert len(set(half["input_ids"][:, 0].tolist())) == 6
    with pytest.raises(ValueError, match="train blocks"):
        draw_halves(train, 82, 0, 0)


def _reads(step, halves) -> list[str]:
    with counted_reads(set()) as calls:
        batch_inner(step, halves, 1, CPU)
    return calls


def test_host_reads_do_not_grow_with_chunks_or_tensors(tiny_lm):
    """One read of the inner products, whatever the chunks and parameter tensors (the other reads are the
    labelled-token counts, per pass: on the host in the probe, and ``training.gradients``'s normaliser)."""
    halves = draw_halves(_blocks(12), 8, 0, 0)
    few = _reads(_step(tiny_lm, "zerolock", targets=["q_proj"]), halves)
    many = _reads(_step(tiny_lm, "zerolock", chunks=4, targets=MANY), halves)
    assert few.count("tolist") == many.count("tolist") == 1
    assert len(few) == len(many), (few, many)


@pytest.mark.parametrize("options", [{"every": 0}, {"multiple": 0}, {"rows_per_pass": 0}])
def test_bad_options_are_refused(options):
    with pytest.raises(ValueError, match="gradient_batch"):
        build_probes({"gradient_batch": options})


def test_registered():
    (probe,) = build_probes({"gradient_batch": {"every": 4, "multiple": 2}})
    assert isinstance(probe, GradientBatchProbe) and (probe.every, probe.multiple) == (4, 2)


STEPS, EVERY = 5, 3


def _config(probes: dict[str, Any]) -> TrainConfig:
    return TrainConfig.from_dict({
        "model": {"path": "embedded", "chunks": 2, "device": "cpu", "lora": {"rank": 4}},
        "data": {"seq_len": 32, "batch_size": 2, "eval_batches": 1},
        "method": {"alpha": 0.5},
        "optim": {"name": "sgd", "lr": 0.1, "schedule": "inv_sqrt"},
        "run": {"steps": STEPS, "eval_every": 5, "checkpoint_every": 3, "progress": False},
        "probes": probes,
    })


PROBED = {"gradient_batch": {"every": EVERY, "multiple": 2}}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    torch.set_num_threads(1)
    root = tmp_path_factory.mktemp("gradient_batch_runs")
    probed_train(_config(PROBED), root / "probed")
    probed_train(_config({}), root / "plain")
    return {"probed": root / "probed", "plain": root / "plain"}


def _training_view(records: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMING_KEYS and not k.startswith("probe/")} for r in records]


def test_the_probe_changes_no_training_metric_or_parameter(runs):
    probed, plain = (read_records(runs[k] / "metrics.jsonl") for k in ("probed", "plain"))
    assert _training_view(probed) == _training_view(plain)
    for step in (3, STEPS):
        name = f"checkpoints/step_{step:08d}/adapters.safetensors"
        a, b = load_file(runs["probed"] / name), load_file(runs["plain"] / name)
        assert a.keys() == b.keys() and all(torch.equal(a[key], b[key]) for key in a)
    logged = [r for r in probed if GRADIENT_BATCH.key(None, "grad_sq_unbiased") in r]
    assert [r["step"] for r in logged] == [0, 3]
    for r in logged:
        per_chunk = [r[GRADIENT_BATCH.key(k, "grad_sq_unbiased")] for k in (1, 2)]
        assert all(isinstance(v, float) and math.isfinite(v) for v in per_chunk)
        assert r["probe/gradient_batch/grad_sq_unbiased"] == pytest.approx(sum(per_chunk), rel=1e-12)


def test_resume_equals_uninterrupted(runs, tmp_path):
    """Resumed from the checkpoint of step 3 (where a measurement is due: ``on_start`` redoes it)."""
    out = tmp_path / "resumed"
    shutil.copytree(runs["probed"], out)
    shutil.rmtree(out / f"checkpoints/step_{STEPS:08d}")
    probed_train(_config(PROBED), out, resume=True)
    assert (out / f"checkpoints/step_{STEPS:08d}").is_dir()  # steps 3 and 4 ran again
    strip = [[{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in read_records(d / "metrics.jsonl")]
             for d in (runs["probed"], out)]
    assert strip[0] == strip[1]
