"""Shared test configuration: hypothesis profiles, seeds, GPU skipping."""

from __future__ import annotations

import os

import pytest
import torch
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", max_examples=200, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Tiny models: one intra-op thread is as fast as two and never stalls on a busy core
# (an OpenMP region waits for every thread, ~15 ms per op when a core is taken).
torch.set_num_threads(int(os.environ.get("ZEROLOCK_TEST_THREADS", "1")))


@pytest.fixture(autouse=True)
def _seed_everything() -> None:
    torch.manual_seed(0)


def runs_slow(config: pytest.Config) -> bool:
    """Whether the ``slow`` tests run: in CI (``CI=true``, as ``.ci/run`` sets it), with
    ``ZEROLOCK_SLOW=1``, or when ``-m`` names them; otherwise they are skipped, so that the
    default suite stays short on a developer's machine."""
    ci = os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")
    return ci or os.environ.get("ZEROLOCK_SLOW") == "1" or "slow" in (config.getoption("markexpr") or "")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skips = {}
    if not torch.cuda.is_available():
        skips["gpu"] = pytest.mark.skip(reason="needs a CUDA device")
    if not runs_slow(config):
        skips["slow"] = pytest.mark.skip(reason="slow: runs in CI (CI=true), with ZEROLOCK_SLOW=1 or -m slow")
    for item in items:
        for marker, skip in skips.items():
            if marker in item.keywords:
                item.add_marker(skip)


def make_tiny_lm(arch: str = "llama", layers: int = 4, vocab: int = 64, seed: int = 0) -> torch.nn.Module:
    """A tiny randomly initialised causal LM of the given architecture, in eval mode."""
    from transformers import (
        GPT2Config,
        GPT2LMHeadModel,
        LlamaConfig,
        LlamaForCausalLM,
        MistralConfig,
        MistralForCausalLM,
        Qwen2Config,
        Qwen2ForCausalLM,
    )

    torch.manual_seed(seed)
    common = dict(vocab_size=vocab, hidden_size=32, intermediate_size=48, num_hidden_layers=layers,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                  tie_word_embeddings=False, bos_token_id=0, eos_token_id=1, pad_token_id=2)
    if arch == "llama":
        model = LlamaForCausalLM(LlamaConfig(**common))
    elif arch == "qwen2":
        model = Qwen2ForCausalLM(Qwen2Config(**common))
    elif arch == "mistral":
        model = MistralForCausalLM(MistralConfig(**common))
    elif arch == "gpt2":
        model = GPT2LMHeadModel(GPT2Config(vocab_size=vocab, n_embd=32, n_layer=layers, n_head=4, n_positions=64,
                                           bos_token_id=0, eos_token_id=1, resid_pdrop=0.0, embd_pdrop=0.0,
                                           attn_pdrop=0.0))
    else:
        raise ValueError(arch)
    return model.eval()


@pytest.fixture
def tiny_lm():
    """Factory fixture: ``tiny_lm("llama" | "qwen2" | "mistral" | "gpt2", layers=4)``."""
    return make_tiny_lm
