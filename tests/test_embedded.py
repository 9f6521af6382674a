"""Tests of the shipped embedded model (zerolock_theory/embedded)."""

from __future__ import annotations

import json
import math

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from zerolock_theory.data import DataConfig, LMData
from zerolock_theory.embedded import EMBEDDED_DIR, embedded_path

MAX_DIR_BYTES = 8 * 1024 * 1024


@pytest.fixture(scope="module")
def tokenizer():
    return AutoTokenizer.from_pretrained(embedded_path(), local_files_only=True)


@pytest.fixture(scope="module")
def model():
    model = AutoModelForCausalLM.from_pretrained(
        embedded_path(), dtype=torch.float32, local_files_only=True
    )
    return model.eval()


def test_files_present_and_small() -> None:
    assert embedded_path() == EMBEDDED_DIR
    for name in ("config.json", "model.safetensors", "tokenizer.json", "pretrain_report.json"):
        assert (EMBEDDED_DIR / name).is_file(), name
    size = sum(p.stat().st_size for p in EMBEDDED_DIR.iterdir() if p.is_file())
    assert size <= MAX_DIR_BYTES, f"embedded dir is {size} bytes"
    config = json.loads((EMBEDDED_DIR / "config.json").read_text())
    stored = config.get("dtype", config.get("torch_dtype"))
    assert stored in ("float16", "bfloat16")


def test_llama_layout(model, tokenizer) -> None:
    config = model.config
    assert config.model_type == "llama" and type(model).__name__ == "LlamaForCausalLM"
    assert config.num_hidden_layers >= 4 and config.num_hidden_layers % 8 == 0
    assert config.max_position_embeddings >= 512
    assert not config.tie_word_embeddings
    assert model.lm_head.weight.data_ptr() != model.model.embed_tokens.weight.data_ptr()
    n_params = sum(p.numel() for p in model.parameters())
    assert 1_000_000 <= n_params <= 5_000_000
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert config.vocab_size == len(tokenizer)


def test_tokenizer(tokenizer) -> None:
    assert tokenizer.eos_token_id is not None and tokenizer.pad_token_id is not None
    assert tokenizer.eos_token_id != tokenizer.pad_token_id
    text = "def add(a, b):\n    return a + b  # the sum\n"
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids) == text
    assert len(ids) < len(text) / 2  # merges learnt on Python source


def test_pretrain_report(model) -> None:
    report = json.loads((EMBEDDED_DIR / "pretrain_report.json").read_text())
    assert report["param_count"] == sum(p.numel() for p in model.parameters())
    assert report["steps"] > 0 and report["final_loss_ema"] < report["log_vocab"]
    assert {"seconds", "corpus_bytes", "seed"} <= set(report)


def test_heldout_prose_ce_well_below_uniform(model, tokenizer) -> None:
    data = LMData(DataConfig(seq_len=128, batch_size=8, eval_batches=2), tokenizer)
    total, count = 0.0, 0
    with torch.no_grad():  # labels are pre-shifted: never pass them to the HF model
        for batch in data.eval_batches():
            logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
            total += torch.nn.functional.cross_entropy(
                logits.flatten(0, 1), batch["labels"].flatten(), reduction="sum").item()
            count += int((batch["labels"] != -100).sum())
    ce = total / count
    assert ce < math.log(len(tokenizer)) - 2.0, f"held-out CE {ce:.3f} vs log V"
