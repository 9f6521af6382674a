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
