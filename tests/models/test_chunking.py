"""ChunkedLM reproduces the model's own forward, for every supported layout."""

from __future__ import annotations

import pytest
import torch

from zerolock_theory.models.chunking import ChunkedLM, UnsupportedArchitectureError, even_boundaries

ARCHS = ["llama", "qwen2", "mistral", "gpt2"]


def _padded_mask(batch: int, length: int) -> torch.Tensor:
    mask = torch.ones(batch, length, dtype=torch.long)
    mask[1, 7:] = 0  # right padding
    mask[2, :3] = 0  # left padding
    return mask


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("padded", [False, True])
@pytest.mark.parametrize("chunks", [1, 2, 4])
def test_chained_chunks_equal_model_logits(tiny_lm, arch, padded, chunks):
    model = tiny_lm(arch)
    chunked = ChunkedLM(model, chunks)
    ids = torch.randint(3, 64, (3, 10))
    mask = _padded_mask(3, 10) if padded else None
    with torch.no_grad():
        reference = model(input_ids=ids, attention_mask=mask).logits
        ours = chunked(ids, mask)
    keep = mask.bool() if padded else torch.ones(3, 10, dtype=torch.bool)
    torch.testing.assert_close(ours[keep], reference[keep], atol=1e-5, rtol=0)


def test_explicit_boundaries_and_layer_assignment(tiny_lm):
    chunked = ChunkedLM(tiny_lm("llama", layers=5), 3, boundaries=[1, 4])
    assert chunked.chunk_layers == [[0], [1, 2, 3], [4]]
    assert even_boundaries(5, 2) == [3]
    assert even_boundaries(8, 4) == [2, 4, 6]


@pytest.mark.parametrize("bad", [[0, 2], [3, 2], [2, 9], [2]])
def test_bad_boundaries_are_refused(tiny_lm, bad):
    with pytest.raises(ValueError):
        ChunkedLM(tiny_lm("llama", layers=5), 3, boundaries=bad)


def test_too_many_chunks_refused(tiny_lm):
    with pytest.raises(ValueError, match="cannot split"):
        ChunkedLM(tiny_lm("llama", layers=2), 3)


def test_unsupported_architecture_names_supported_ones():
    class Other(torch.nn.Module):
        config = None

    with pytest.raises(UnsupportedArchitectureError, match="Llama-style.*GPT-2"):
        ChunkedLM(Other(), 2)


@pytest.mark.parametrize("arch", ARCHS)
def test_train_and_eval_switch_every_module_once(tiny_lm, arch):
    chunked = ChunkedLM(tiny_lm(arch), 2)
    calls: list[int] = []
    originals = {}
    for module in chunked.model.modules():  # count how often each module's train() runs
        originals[id(module)] = module.train
        module.train = (lambda m, f: lambda mode=True: (calls.append(id(m)), f(mode))[1])(module, module.train)
    assert chunked.eval() is chunked
    assert not chunked.training and not any(m.training for m in chunked.modules())
    assert sorted(calls) == sorted(set(calls)) and set(calls) == set(originals)
    chunked.train()
    assert chunked.training and all(m.training for m in chunked.modules())
    chunked.extra = torch.nn.Dropout(0.5)  # a child outside the model is switched too
    chunked.eval()
    assert not chunked.extra.training
    with pytest.raises(ValueError, match="boolean"):
        chunked.train("yes")  # type: ignore[arg-type]


@pytest.mark.parametrize("arch", ARCHS)
def test_flat_switch_sets_the_flags_nn_module_train_sets(tiny_lm, arch):
    """The flat pass (no module adds to ``train``) leaves every flag where the inherited
    recursion leaves it, from mixed flags, a child outside the model included."""
    from zerolock_theory.models.chunking import _plain_modules

    chunked, reference = ChunkedLM(tiny_lm(arch), 2), ChunkedLM(tiny_lm(arch), 2)
    for c in (chunked, reference):
        c.extra = torch.nn.Sequential(torch.nn.Dropout(0.5), torch.nn.Linear(2, 2))
    assert _plain_modules(chunked) is not None  # the flat path is the one exercised
    mods, ref_mods = list(chunked.modules()), list(reference.modules())
    for mode in (False, True, False):
        for i, (m, r) in enumerate(zip(mods, ref_mods, strict=True)):  # mixed flags before each switch
            m.training = r.training = bool(i % 3)
        assert chunked.train(mode) is chunked
        torch.nn.Module.train(reference, mode)
        assert [m.training for m in mods] == [r.training for r in ref_mods] == [mode] * len(mods)


def test_a_module_with_its_own_train_is_switched_by_it(tiny_lm):
    """A module whose class adds to ``train`` sends the switch through every module's own ``train``."""
    from zerolock_theory.models.chunking import _plain_modules

    seen: list[bool] = []

    class Counting(torch.nn.Dropout):
        def train(self, mode: bool = True):
            seen.append(mode)
            return super().train(mode)

    chunked = ChunkedLM(tiny_lm("llama"), 2)
    chunked.extra = Counting(0.5)
    assert _plain_modules(chunked) is None
    chunked.eval()
    chunked.train()
    assert seen == [False, True] and chunked.extra.training and all(m.training for m in chunked.modules())
