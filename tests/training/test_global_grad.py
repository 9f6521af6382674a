"""Global Ĝ_t of the task loss from two halves of the training batch (``run.global_grad_every``)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from zerolock_theory.config import LoraSettings, MethodConfig, ModelConfig, OptimConfig, TrainConfig
from zerolock_theory.jsonio import read_records
from zerolock_theory.models import ChunkedLM, attach_adapters
from zerolock_theory.records import GLOBAL_GRAD_SQ_UNBIASED
from zerolock_theory.training.loop import TIMING_KEYS, train
from zerolock_theory.training.steps import build_step, global_grad_sq_unbiased, split_halves

V = 64


def _step(tiny_lm, name: str):
    chunked = ChunkedLM(tiny_lm("llama"), 2)
    attach_adapters(chunked, LoraSettings(rank=4))
    with torch.no_grad():
        for n, p in chunked.model.named_parameters():
            if "lora_B" in n:
                p.normal_(0, 0.05)
    return build_step(chunked, MethodConfig(name=name, alpha=0.5), OptimConfig(name="sgd", lr=0.1), ModelConfig(), 10)


def _batch(rows: int = 4):
    g = torch.Generator().manual_seed(5)
    ids = torch.randint(3, V, (rows, 7), generator=g)
    labels = torch.randint(3, V, (rows, 7), generator=g)
    labels[0, -3:] = -100  # the halves hold different numbers of labelled tokens
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}


def _by_hand(step, batch) -> float:
    """⟨g1, g2⟩ with g_i the gradient of the half's mean CE of the HF model's own logits."""
    params = [p for ps in step.params for p in ps]
    grads = []
    for half in split_halves(batch):
        logits = step.chunked.model(input_ids=half["input_ids"], attention_mask=half["attention_mask"]).logits
        mask = half["labels"] != -100
        loss = F.cross_entropy(logits[mask].float(), half["labels"][mask])
        grads.append(torch.cat([g.reshape(-1).double() for g in torch.autograd.grad(loss, params)]))
    return float(torch.dot(*grads))


@pytest.mark.parametrize("name", ["zerolock", "backprop"])
def test_global_estimate_equals_the_models_own_loss_by_hand(tiny_lm, name):
    step = _step(tiny_lm, name)
    batch = _batch()
    before = [p.detach().clone() for ps in step.params for p in ps]
    value = global_grad_sq_unbiased(step, batch)
    assert value == pytest.approx(_by_hand(step, batch), rel=1e-5)
    assert all(p.grad is None for ps in step.params for p in ps)  # autograd only
    assert all(torch.equal(a, p) for a, p in zip(before, (p for ps in step.params for p in ps), strict=True))
    if name == "backprop":  # the estimator backprop's step already logs, from the same halves
        assert step.train_step(batch, 0)["train/grad_sq_unbiased"] == pytest.approx(value, rel=1e-5)


def test_global_estimate_needs_two_labelled_halves(tiny_lm):
    step = _step(tiny_lm, "zerolock")
    assert global_grad_sq_unbiased(step, _batch(rows=1)) is None
    batch = _batch()
    batch["labels"][:2] = -100
    assert global_grad_sq_unbiased(step, batch) is None


def _config(every: int, name: str = "zerolock") -> TrainConfig:
    return TrainConfig.from_dict({
        "model": {"path": "embedded", "chunks": 2, "device": "cpu", "lora": {"rank": 4, "dropout": 0.1}},
        "data": {"seq_len": 16, "batch_size": 2, "eval_batches": 1},
        "method": {"name": name, "alpha": 0.5},
        "optim": {"name": "sgd", "lr": 0.05},
        "run": {"steps": 3, "eval_every": 3, "checkpoint_every": 3, "progress": False, "global_grad_every": every},
    })


def test_global_estimate_leaves_training_bitwise_unchanged(tmp_path):
    """With adapter dropout the extra forward would draw from the training RNG: it runs forked."""
    train(_config(2), tmp_path / "on")
    train(_config(0), tmp_path / "off")
    name = "checkpoints/step_00000003/adapters.safetensors"
    on, off = load_file(tmp_path / "on" / name), load_file(tmp_path / "off" / name)
    assert on.keys() == off.keys() and all(torch.equal(on[k], off[k]) for k in on)
    rec_on, rec_off = read_records(tmp_path / "on" / "metrics.jsonl"), read_records(tmp_path / "off" / "metrics.jsonl")
    assert [r["step"] for r in rec_on if GLOBAL_GRAD_SQ_UNBIASED in r] == [0, 2]
    assert all(isinstance(r[GLOBAL_GRAD_SQ_UNBIASED], float) for r in rec_on if GLOBAL_GRAD_SQ_UNBIASED in r)
    strip = [{k: v for k, v in r.items() if k not in TIMING_KEYS and k != GLOBAL_GRAD_SQ_UNBIASED} for r in rec_on]
    assert strip == [{k: v for k, v in r.items() if k not in TIMING_KEYS} for r in rec_off]


def test_backprop_logs_its_own_estimate(tmp_path):
    train(_config(1, "backprop"), tmp_path / "bp")
    records = read_records(tmp_path / "bp" / "metrics.jsonl")
    assert all(r[GLOBAL_GRAD_SQ_UNBIASED] == r["train/grad_sq_unbiased"] for r in records)


@pytest.mark.parametrize("bad", [-1, 1.5, True])
def test_bad_cadence_is_refused(bad):
    with pytest.raises(ValueError, match="global_grad_every"):
        TrainConfig.from_dict({"run": {"global_grad_every": bad}})
