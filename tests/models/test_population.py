"""The stacked LoRA layer: S members in one forward equal S single-adapter forwards."""

from __future__ import annotations

import copy

import pytest
import torch

from zerolock_theory.config import LoraSettings
from zerolock_theory.models import ChunkedLM, attach_adapters, load_model, trainable_state_dict
from zerolock_theory.models.adapters import peft_state_dict
from zerolock_theory.models.population import StackedLora, stack_adapters

S = 3


def _member_states(chunked: ChunkedLM, count: int) -> list[dict[str, torch.Tensor]]:
    """``count`` different adapter sets (A and B random), under a single run's names."""
    base = trainable_state_dict(chunked.model)
    states = []
    for s in range(count):
        g = torch.Generator().manual_seed(10 + s)
        states.append({n: torch.randn(v.shape, generator=g) * 0.05 for n, v in base.items()})
    return states


def _single(model: torch.nn.Module, chunks: int, settings: LoraSettings, state) -> ChunkedLM:
    chunked = ChunkedLM(copy.deepcopy(model), chunks)
    attach_adapters(chunked, settings)
    with torch.no_grad():
        params = dict(chunked.model.named_parameters())
        for name, value in state.items():
            params[name].copy_(value)
    return chunked


def _models(tiny_lm):
    tiny = tiny_lm("llama")
    yield "tiny-llama", tiny, 2, tiny.config.vocab_size
    yield "tiny-gpt2", tiny_lm("gpt2"), 2, 64
    embedded, _ = load_model("embedded", "float32", "cpu")
    yield "embedded", embedded, 4, embedded.config.vocab_size


@pytest.mark.parametrize("dropout", [0.0, 0.2], ids=["no-dropout", "dropout"])
def test_population_forward_and_gradients_equal_single_runs(tiny_lm, dropout):
    settings = LoraSettings(rank=4, dropout=dropout)
    for label, model, chunks, vocab in _models(tiny_lm):
        model = model.float()
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(3, vocab, (S * 2, 7), generator=g)
        pop = ChunkedLM(copy.deepcopy(model), chunks)
        attach_adapters(pop, settings)
        states = _member_states(pop, S)
        singles = [_single(model, chunks, settings, st) for st in states]
        population = stack_adapters(pop, states)
        seeds = [100 + s for s in range(S)]
        population.seed_dropout(seeds)
        pop.train(dropout > 0)
        logits = pop(ids)
        logits.square().mean(dim=(1, 2)).sum().backward()
        for s, single in enumerate(singles):
            rows = slice(2 * s, 2 * s + 2)
            # float32 rounding depends on the batch's shape (the BLAS picks its blocking by it): a single run's
            # own logits move by up to ~1e-5 when other rows join its batch; the population may move as much
            single.train(False)
            with torch.no_grad():
                noise = float((single(ids)[rows] - single(ids[rows])).abs().max())
            single.train(dropout > 0)
            torch.manual_seed(seeds[s])  # a single run draws its dropout masks from the global RNG
            want = single(ids[rows])
            want.square().mean(dim=(1, 2)).sum().backward()
            torch.testing.assert_close(logits[rows], want, atol=max(1e-6, 2 * noise), rtol=1e-6,
                                       msg=lambda m, label=label, s=s, noise=noise: f"{label} {s} (batch noise {noise:.2g}): {m}")
            got_grads = [p.grad for ps in population.member_blocks(s) for p in ps]
            want_grads = [p.grad for k in range(1, chunks + 1) for p in single.chunk_parameters(k)]
            assert len(got_grads) == len(want_grads)
            for a, b in zip(got_grads, want_grads, strict=True):  # float rounding of a sum over rows
                assert float((a - b).norm()) <= 1e-5 * float(b.norm()) + 1e-9, label


def test_member_state_round_trip_and_peft_names(tiny_lm):
    chunked = ChunkedLM(tiny_lm("llama"), 2)
    attach_adapters(chunked, LoraSettings(rank=4))
    single_names = set(trainable_state_dict(chunked.model))
    states = _member_states(chunked, S)
    population = stack_adapters(chunked, states)
    assert sum(isinstance(m, StackedLora) for m in chunked.model.modules()) == len(population.layers)
    for s in range(S):
        got = population.member_state_dict(s)
        assert set(got) == single_names
        assert all(torch.equal(got[n], states[s][n]) for n in got)
        assert set(peft_state_dict(got)) == set(peft_state_dict(states[s]))
    population.load_member(1, states[0])
    assert all(torch.equal(v, states[0][n]) for n, v in population.member_state_dict(1).items())
    with pytest.raises(ValueError, match="names differ"):
        population.load_member(0, {"x": torch.zeros(1)})
    with pytest.raises(ValueError, match="do not split"):
        chunked(torch.zeros(S + 1, 4, dtype=torch.long))
