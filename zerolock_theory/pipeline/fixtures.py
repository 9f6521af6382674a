"""Tiny model directories for pipeline tests and benchmarks.

The pipeline needs a model *directory* (every stage process loads it by path). Tests and
the memory benchmark use the embedded model when its files are present and otherwise a tiny
random Llama with the embedded architecture's layout (8 decoder layers, untied head) and a
byte-level BPE tokenizer, written by ``tiny_model_dir``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

__all__ = ["default_model_path", "small_config", "small_corpus", "tiny_model_dir"]

EOS, PAD = "<|endoftext|>", "<|pad|>"


def _tokenizer(vocab_size: int):
    """Byte-level BPE trained on a slice of the embedded prose corpus (pydoc topics)."""
    from pydoc_data.topics import topics

    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOS, PAD],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    texts = [topics[key] for key in sorted(topics)][:20]
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=EOS, eos_token=EOS, unk_token=EOS, pad_token=PAD,
        model_max_length=512,
    )


def tiny_model_dir(out: str | Path, layers: int = 8, hidden: int = 32, vocab_size: int = 320,
                   seed: int = 0) -> Path:
    """Write a random ``LlamaForCausalLM`` and its tokenizer to ``out``; return the directory.

    Idempotent: an existing directory with ``config.json`` is returned unchanged.
    """
    from transformers import LlamaConfig, LlamaForCausalLM

    out = Path(out)
    if (out / "config.json").is_file():
        return out
    tokenizer = _tokenizer(vocab_size)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=2 * hidden + 16,
        num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=4,
        max_position_embeddings=512, tie_word_embeddings=False,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def default_model_path(scratch: str | Path) -> str:
    """"embedded" when the shipped model is present, else a tiny model under ``scratch``."""
    from zerolock_theory.embedded import embedded_path

    try:
        embedded_path()
        return "embedded"
    except FileNotFoundError:
        return str(tiny_model_dir(Path(scratch) / "tiny-llama"))


def small_corpus(out: str | Path, topics_count: int = 12) -> Path:
    """A short .txt corpus (the first pydoc topics): tokenized in a blink by every stage."""
    from pydoc_data.topics import topics

    path = Path(out)
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n\n".join(topics[key] for key in sorted(topics)[:topics_count]), encoding="utf-8")
    return path


def small_config(model_path: str, chunks: int, steps: int = 6, method: str = "zerolock",
                 data_source: str = "embedded", **run: Any):
    """A seconds-long run: seq_len 32, batch 2, SGD at 0.05, checkpoints every 2 steps."""
    from zerolock_theory.config import TrainConfig

    return TrainConfig.from_dict({
        "model": {"path": model_path, "chunks": chunks, "device": "cpu"},
        "data": {"source": data_source, "seq_len": 32, "batch_size": 2, "eval_batches": 1},
        "method": {"name": method},
        "optim": {"name": "sgd", "lr": 0.05},
        "run": {"steps": steps, "checkpoint_every": 2, "eval_every": 1000, "progress": False, **run},
    })
