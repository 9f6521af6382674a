"""The model families table: every listed model type chunks exactly, and the table drives adapters.

A family is one entry of ``models.families.FAMILIES``; each of its ``model_types`` needs a tiny
config in ``TINY`` below (a new type without one fails ``test_every_model_type_has_a_tiny_config``).
"""

from __future__ import annotations

import pytest
import torch
from transformers import AutoConfig, AutoModelForCausalLM

from zerolock_theory.config import LoraSettings
from zerolock_theory.models.adapters import attach_adapters, save_peft_adapter, trainable_state_dict
from zerolock_theory.models.chunking import ChunkedLM, UnsupportedArchitectureError
from zerolock_theory.models.families import (
    FAMILIES,
    family_for_gguf,
    family_of,
    head_is_tied,
    supported_text,
)

_LLAMA_LIKE = dict(vocab_size=64, hidden_size=32, intermediate_size=48, num_attention_heads=4,
                   num_key_value_heads=2, max_position_embeddings=64, head_dim=8)
TINY: dict[str, dict] = {
    "llama": _LLAMA_LIKE,
    "mistral": _LLAMA_LIKE,
    "qwen2": _LLAMA_LIKE,
    "qwen3": _LLAMA_LIKE,
    "gpt2": dict(vocab_size=64, n_embd=32, n_head=4, n_positions=64, resid_pdrop=0.0, embd_pdrop=0.0,
                 attn_pdrop=0.0),
}
LAYERS_KEY = {"gpt2": "n_layer"}
MODEL_TYPES = [(f, t) for f in FAMILIES for t in f.model_types]


def tiny(model_type: str, layers: int = 4, tied: bool = False) -> torch.nn.Module:
    """A random causal LM of ``model_type`` (eval mode)."""
    torch.manual_seed(0)
    kwargs = {**TINY[model_type], LAYERS_KEY.get(model_type, "num_hidden_layers"): layers}
    config = AutoConfig.for_model(model_type, **kwargs, tie_word_embeddings=tied or model_type == "gpt2")
    return AutoModelForCausalLM.from_config(config).eval()


def test_every_model_type_has_a_tiny_config():
    assert {t for _, t in MODEL_TYPES} <= set(TINY)


@pytest.mark.parametrize(("family", "model_type"), MODEL_TYPES, ids=[t for _, t in MODEL_TYPES])
def test_each_model_type_chunks_to_its_logits(family, model_type):
    model = tiny(model_type)
    assert family_of(model) is family
    chunked = ChunkedLM(model, 3)
    ids = torch.randint(0, 64, (2, 9))
    mask = torch.ones(2, 9, dtype=torch.long)
    mask[1, 6:] = 0
    with torch.no_grad():
        expected = model(input_ids=ids, attention_mask=mask).logits
        got = chunked(ids, mask)
    keep = mask.bool()
    torch.testing.assert_close(got[keep], expected[keep], atol=1e-5, rtol=0)
    names = {n for n, _ in model.named_modules()}
    assert set(family.lora_targets) <= {n.split(".")[-1] for n in names if n.startswith(family.layers + ".")}


@pytest.mark.parametrize("chunks", [2, 3, 5, 6, 10, 15])
def test_thirty_layers_with_a_tied_head_split_into_k_chunks(chunks):
    model = tiny("llama", layers=30, tied=True)
    assert head_is_tied(model)
    chunked = ChunkedLM(model, chunks)
    assert [len(c) for c in chunked.chunk_layers] == [30 // chunks] * chunks
    assert sum(chunked.chunk_layers, []) == list(range(30))
    ids = torch.randint(0, 64, (2, 7))
    with torch.no_grad():
        expected = model(input_ids=ids).logits
        hiddens = chunked.hiddens(ids)
    assert len(hiddens) == chunks + 1
    torch.testing.assert_close(chunked.readout(hiddens[-1]), expected, atol=1e-5, rtol=0)
    chunked.freeze_readout()
    assert not model.lm_head.weight.requires_grad and not model.model.embed_tokens.weight.requires_grad


@pytest.mark.parametrize("model_type", ["llama", "gpt2"])
def test_adapters_follow_the_table(tmp_path, model_type):
    model = tiny(model_type, layers=2)
    chunked = ChunkedLM(model, 2)
    attach_adapters(chunked, LoraSettings(rank=2))
    family = chunked.family
    trained = trainable_state_dict(model)
    targets = {name.split(".lora_")[0].rsplit(".", 1)[-1] for name in trained}
    assert targets == set(family.lora_targets)
    assert all(name.startswith(family.layers + ".") for name in trained)
    readout = [p for m in chunked.readout_modules() for p in m.parameters()]
    assert readout and not any(p.requires_grad for p in readout)
    save_peft_adapter(trained, LoraSettings(rank=2), "base", tmp_path)
    import json

    assert json.loads((tmp_path / "adapter_config.json").read_text())["fan_in_fan_out"] is family.conv1d


def test_unknown_model_types_and_gguf_architectures_are_refused():
    model = tiny("llama", layers=2)
    model.config.model_type = "phi3"
    with pytest.raises(UnsupportedArchitectureError, match="'phi3'.*Llama-style.*GPT-2"):
        ChunkedLM(model, 2)
    assert family_for_gguf("qwen2").name == "llama" and family_for_gguf("gpt2").name == "gpt2"
    assert family_for_gguf("mamba") is None
    assert "qwen3" in supported_text()
