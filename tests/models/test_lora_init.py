"""``model.lora.init_b_std``: B ≠ 0 at init as the LoRA warm-up control, seeded by the run seed."""

from __future__ import annotations

import pytest
import torch

from zerolock_theory.config import LoraSettings, TrainConfig
from zerolock_theory.models import ChunkedLM, attach_adapters


def _adapters(tiny_lm, seed: int | None, **lora) -> dict[str, torch.Tensor]:
    torch.manual_seed(11)  # the global RNG peft draws A from (the run seeds it the same way)
    chunked = ChunkedLM(tiny_lm("llama"), 2)
    if seed is None:
        attach_adapters(chunked, LoraSettings(rank=4, **lora))  # today's call, without the option
    else:
        attach_adapters(chunked, LoraSettings(rank=4, **lora), seed)
    return {n: p.detach().clone() for n, p in chunked.model.named_parameters() if "lora_" in n}


def test_zero_std_reproduces_peft_init_bit_for_bit(tiny_lm):
    default = _adapters(tiny_lm, None)
    zero = _adapters(tiny_lm, 7, init_b_std=0.0)
    assert default.keys() == zero.keys() and all(torch.equal(default[n], zero[n]) for n in default)
    assert all(not v.any() for n, v in default.items() if "lora_B" in n)  # peft's B = 0


def test_positive_std_gives_seeded_nonzero_b_and_leaves_a(tiny_lm):
    default = _adapters(tiny_lm, None)
    a, again, other = (_adapters(tiny_lm, s, init_b_std=0.02) for s in (3, 3, 4))
    b_names = [n for n in a if "lora_B" in n]
    assert b_names and all(a[n].any() for n in b_names)
    assert all(torch.equal(a[n], again[n]) for n in a)  # deterministic per seed
    assert all(not torch.equal(a[n], other[n]) for n in b_names)  # another seed, other draws
    assert all(torch.equal(a[n], default[n]) for n in a if "lora_A" in n)  # A and the global RNG untouched
    values = torch.cat([a[n].reshape(-1) for n in b_names])
    assert values.std().item() == pytest.approx(0.02, rel=0.1) and abs(values.mean().item()) < 0.002


@pytest.mark.parametrize("bad", [-0.1, float("nan"), float("inf"), "0.1", True])
def test_bad_std_is_refused(bad):
    with pytest.raises(ValueError, match="init_b_std"):
        TrainConfig.from_dict({"model": {"lora": {"init_b_std": bad}}})
