"""A population killed at a checkpoint resumes equal to an uninterrupted one; a member's checkpoint
is a single run's (a single run resumes from it and continues as the member)."""

from __future__ import annotations

import copy

import torch

from zerolock_theory.config import LoraSettings, MethodConfig, ModelConfig, OptimConfig
from zerolock_theory.models import ChunkedLM, attach_adapters, load_model, trainable_state_dict
from zerolock_theory.models.population import stack_adapters
from zerolock_theory.training.population import (
    build_population_step,
    member_states,
    restore_members,
)
from zerolock_theory.training.state import (
    latest_checkpoint,
    load_checkpoint,
    restore_rng,
    save_checkpoint,
)
from zerolock_theory.training.steps import build_step

S, STEPS, KILL, ROWS, LENGTH, K = 3, 8, 4, 4, 12, 2
SEEDS = [5, 6, 7]
SETTINGS = LoraSettings(rank=4, dropout=0.1, init_b_std=0.01)
METHOD = MethodConfig(direction="reverse", alpha=0.5, epsilon=0.1)
OPTIM = OptimConfig(name="adamw", lr=3e-3, schedule="cosine", max_grad_norm=0.5)
MODEL_CFG = ModelConfig(chunks=K)


def _data(vocab: int) -> list[list[dict[str, torch.Tensor]]]:
    out = []
    for seed in SEEDS:
        g = torch.Generator().manual_seed(seed)
        batches = []
        for _ in range(STEPS):
            ids = torch.randint(3, vocab, (ROWS, LENGTH), generator=g)
            batches.append({"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": torch.roll(ids, -1, 1)})
        out.append(batches)
    return out


def _population(model, initial):
    chunked = ChunkedLM(copy.deepcopy(model), K)
    attach_adapters(chunked, SETTINGS)
    population = stack_adapters(chunked, initial)
    population.seed_dropout(SEEDS)
    chunked.train()
    return build_population_step(population, METHOD, OPTIM, MODEL_CFG, STEPS)


def _initial(model):
    states = []
    for seed in SEEDS:
        chunked = ChunkedLM(copy.deepcopy(model), K)
        torch.manual_seed(seed)
        attach_adapters(chunked, SETTINGS, seed)
        states.append(trainable_state_dict(chunked.model))
    return states


def test_killed_population_resumes_equal_and_members_resume_as_single_runs(tmp_path):
    model, _ = load_model("embedded", "float32", "cpu")
    data, initial = _data(model.config.vocab_size), _initial(model)

    whole = _population(model, initial)
    whole_metrics = [whole.train_step([d[t] for d in data], t) for t in range(STEPS)]

    killed = _population(model, initial)
    for t in range(KILL):
        killed.train_step([d[t] for d in data], t)
    for s, state in enumerate(member_states(killed, KILL, [{"position": KILL}] * S)):
        save_checkpoint(tmp_path / f"member-{s}", state)
    del killed  # the process dies here

    states = [load_checkpoint(latest_checkpoint(tmp_path / f"member-{s}")) for s in range(S)]
    resumed = _population(model, _initial(model))
    assert restore_members(resumed, states) == KILL
    resumed_metrics = [resumed.train_step([d[t] for d in data], t) for t in range(KILL, STEPS)]
    assert resumed_metrics == whole_metrics[KILL:]  # bit for bit
    for s in range(S):
        got, want = resumed.population.member_state_dict(s), whole.population.member_state_dict(s)
        assert all(torch.equal(got[n], want[n]) for n in want)

    # member 1's checkpoint is a single run's: load it as _restore does and continue alone
    s = 1
    states = [load_checkpoint(latest_checkpoint(tmp_path / f"member-{i}")) for i in range(S)]  # fresh tensors
    single = ChunkedLM(copy.deepcopy(model), K)
    attach_adapters(single, SETTINGS)
    step = build_step(single, METHOD, OPTIM, MODEL_CFG, STEPS)
    params = dict(single.model.named_parameters())
    assert set(states[s].params) == {n for n, p in params.items() if p.requires_grad}
    with torch.no_grad():
        for name, value in states[s].params.items():
            params[name].copy_(value)
    for opt, saved in zip(step.optimizers, states[s].optimizers, strict=True):
        opt.load_state_dict(saved)
    restore_rng(states[s].rng)
    single.train()
    alone = [step.train_step(data[s][t], t) for t in range(KILL, STEPS)]
    assert alone == [m[s] for m in whole_metrics[KILL:]]
    final = trainable_state_dict(single.model)
    want = whole.population.member_state_dict(s)
    assert all(torch.equal(final[n], want[n]) for n in want)
