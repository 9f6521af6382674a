"""A population of S = 3 equals three separate runs: loss, Ĝ_t and every LoRA tensor, 20 steps."""

from __future__ import annotations

import copy
import math

import pytest
import torch

from zerolock_theory.config import LoraSettings, MethodConfig, ModelConfig, OptimConfig
from zerolock_theory.models import ChunkedLM, attach_adapters, load_model, trainable_state_dict
from zerolock_theory.models.population import stack_adapters
from zerolock_theory.records import GRAD_NORM_SQ
from zerolock_theory.training.population import build_population_step
from zerolock_theory.training.steps import build_step

S, STEPS, ROWS, LENGTH, K = 3, 20, 4, 12, 4
SEEDS = [3, 11, 29]
RTOL = 1e-5

METHODS = {
    "zerolock-forward": MethodConfig(direction="forward", alpha=0.5),
    "zerolock-reverse": MethodConfig(direction="reverse", alpha=0.5, epsilon=0.1),
    "backprop": MethodConfig(name="backprop"),
}


@pytest.fixture(scope="module")
def embedded():
    model, _ = load_model("embedded", "float32", "cpu")
    return model


def _batches(seed: int, vocab: int) -> list[dict[str, torch.Tensor]]:
    """A member's own data order: its minibatches, with a different number of labels per half."""
    g = torch.Generator().manual_seed(1000 + seed)
    out = []
    for t in range(STEPS):
        ids = torch.randint(3, vocab, (ROWS, LENGTH), generator=g)
        labels = torch.randint(3, vocab, (ROWS, LENGTH), generator=g)
        labels[0, -(t % 5) - 1:] = -100
        out.append({"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels})
    return out


def _close(got: float | None, want: float | None, scale: float, what: str) -> None:
    assert (got is None) == (want is None), what
    if want is not None:
        assert math.isfinite(got), what
        assert abs(got - want) <= RTOL * max(abs(want), scale), f"{what}: {got} against {want}"


def _single_run(model, seed: int, settings: LoraSettings, method, optim, model_cfg):
    chunked = ChunkedLM(copy.deepcopy(model), K)
    torch.manual_seed(seed)
    attach_adapters(chunked, settings, seed)
    return chunked, build_step(chunked, method, optim, model_cfg, STEPS)


@pytest.mark.parametrize("name", sorted(METHODS))
def test_population_equals_separate_runs(embedded, name):
    method = METHODS[name]
    settings = LoraSettings(rank=4, dropout=0.1, init_b_std=0.01)
    optim = OptimConfig(name="adamw", lr=3e-3, schedule="cosine", max_grad_norm=0.5)
    model_cfg = ModelConfig(chunks=K)
    vocab = embedded.config.vocab_size
    runs = [_single_run(embedded, seed, settings, method, optim, model_cfg) for seed in SEEDS]
    initial = [{n: v.clone() for n, v in trainable_state_dict(c.model).items()} for c, _ in runs]
    assert not torch.equal(*(next(iter(st.values())) for st in initial[:2]))  # seeds give different adapters
    pop_chunked = ChunkedLM(copy.deepcopy(embedded), K)
    attach_adapters(pop_chunked, settings)
    population = stack_adapters(pop_chunked, initial)
    population.seed_dropout([7 * s for s in SEEDS])
    pop_step = build_population_step(population, method, optim, model_cfg, STEPS)
    data = [_batches(seed, vocab) for seed in SEEDS]

    singles = []
    for s, (chunked, step) in enumerate(runs):
        chunked.train()
        torch.manual_seed(7 * SEEDS[s])  # a single run's dropout draws from the global RNG
        singles.append([step.train_step(data[s][t], t) for t in range(STEPS)])
    pop_chunked.train()
    together = [pop_step.train_step([data[s][t] for s in range(S)], t) for t in range(STEPS)]

    for s in range(S):
        for t in range(STEPS):
            want, got = singles[s][t], together[t][s]
            assert set(got) == set(want)
            scale = abs(want[GRAD_NORM_SQ])  # Ĝ_t's own size can be near 0: compare on ‖∇‖²
            for key, value in want.items():
                _close(got[key], value, scale if "grad_sq_unbiased" in key else 0.0, f"{name} member {s} step {t} {key}")
        final = trainable_state_dict(runs[s][0].model)
        mine = population.member_state_dict(s)
        assert set(mine) == set(final)
        for key, value in final.items():
            assert float((mine[key] - value).norm()) <= RTOL * float(value.norm()), f"{name} member {s} {key}"


@pytest.mark.parametrize("name", ["zerolock-forward", "zerolock-reverse"])
def test_population_global_grad_sq_equals_each_members_own(embedded, name):
    """Every member's global Ĝ_t in one pass equals ``steps.global_grad_sq_unbiased`` inside
    ``member(s)`` bit for bit (CPU), with dropout on and a member whose half has no label (None); the global RNG
    and every member's dropout stream are left as they were."""
    from zerolock_theory.training.steps import global_grad_sq_unbiased

    method = METHODS[name]
    settings = LoraSettings(rank=4, dropout=0.1, init_b_std=0.01)
    optim, model_cfg = OptimConfig(name="sgd", lr=0.05), ModelConfig(chunks=K)
    vocab = embedded.config.vocab_size
    initial = []
    for seed in SEEDS:
        chunked, _ = _single_run(embedded, seed, settings, method, optim, model_cfg)
        initial.append({n: v.clone() for n, v in trainable_state_dict(chunked.model).items()})
    pop_chunked = ChunkedLM(copy.deepcopy(embedded), K)
    attach_adapters(pop_chunked, settings)
    population = stack_adapters(pop_chunked, initial)
    population.seed_dropout([7 * s for s in SEEDS])
    pop_step = build_population_step(population, method, optim, model_cfg, STEPS)
    pop_chunked.train()
    for t in (0, 3):
        batches = [_batches(seed, vocab)[t] for seed in SEEDS]
        batches[2]["labels"][: ROWS // 2] = -100  # member 2: its first half has no label
        states = [g.get_state() for g in population.rng.generators]
        global_state = torch.get_rng_state()
        got = pop_step.global_grad_sq_unbiased(batches)
        assert all(torch.equal(g.get_state(), st) for g, st in zip(population.rng.generators, states, strict=True))
        assert torch.equal(torch.get_rng_state(), global_state)
        want = []
        for s in range(S):
            with population.member(s):
                own = copy.copy(pop_step.inner)
                own.params = pop_step.params[s]
                want.append(global_grad_sq_unbiased(own, batches[s]))
        assert got[2] is None and want[2] is None
        for s in range(2):
            assert want[s] is not None and got[s] is not None and want[s] != 0.0
            assert got[s] == want[s], f"member {s} step {t}: {got[s]} against {want[s]}"  # bit for bit on a CPU
        pop_step.train_step(batches, t)  # move the adapters before the next check
