"""A tiny random Llama written as a GGUF file with the ``gguf`` package's writer (test helper).

``write_tiny_gguf(path)`` returns the Hugging Face model the file holds, so a test can compare a
model converted from the file with the same weights loaded directly. The file carries what
llama.cpp's converter writes: Llama metadata, the q/k projections permuted the way llama.cpp
permutes them (transformers undoes it when loading), and a byte-level BPE tokenizer
(256 byte tokens, a few merges, one control token).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

VOCAB_MERGES = [("Ġ", "t"), ("h", "e"), ("Ġt", "he")]


def _permute(weight: np.ndarray, n_head: int) -> np.ndarray:
    """llama.cpp's q/k row order (``convert_hf_to_gguf`` ``LlamaModel.permute``)."""
    return (weight.reshape(n_head, 2, weight.shape[0] // n_head // 2, *weight.shape[1:])
            .swapaxes(1, 2).reshape(weight.shape))


def tokens() -> list[str]:
    """The byte alphabet (GPT-2 spelling), the merged tokens and ``<|endoftext|>``."""
    from transformers.convert_slow_tokenizer import bytes_to_unicode

    return [*bytes_to_unicode().values(), *("".join(m) for m in VOCAB_MERGES), "<|endoftext|>"]


def tiny_llama(layers: int = 2, tied: bool = False, seed: int = 0) -> torch.nn.Module:
    """The random Llama that ``write_tiny_gguf`` stores (vocabulary of ``tokens()``)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    vocab = len(tokens())
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=vocab, hidden_size=32, intermediate_size=48, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                         rms_norm_eps=1e-6, tie_word_embeddings=tied, bos_token_id=vocab - 1,
                         eos_token_id=vocab - 1)
    model = LlamaForCausalLM(config).eval()
    with torch.no_grad():  # norms away from 1 so that a lost norm weight shows
        for name, p in model.named_parameters():
            if "norm" in name:
                p.uniform_(0.5, 1.5)
    return model


def write_tiny_gguf(path: Path, layers: int = 2, tied: bool = False, f16: bool = False,
                    architecture: str = "llama") -> torch.nn.Module:
    """Write the tiny Llama to ``path`` (float32 or float16 tensors); return the model."""
    import gguf

    model = tiny_llama(layers, tied)
    cfg = model.config
    heads, kv = cfg.num_attention_heads, cfg.num_key_value_heads
    writer = gguf.GGUFWriter(str(path), architecture)
    writer.add_name("tiny-llama")
    writer.add_block_count(layers)
    writer.add_context_length(cfg.max_position_embeddings)
    writer.add_embedding_length(cfg.hidden_size)
    writer.add_feed_forward_length(cfg.intermediate_size)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv)
    writer.add_rope_dimension_count(cfg.hidden_size // heads)
    writer.add_rope_freq_base(float(model.config.rope_parameters["rope_theta"]))
    writer.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    writer.add_vocab_size(cfg.vocab_size)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if f16 else gguf.LlamaFileType.ALL_F32)
    vocab = tokens()
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(vocab)
    writer.add_token_types([gguf.TokenType.NORMAL] * (len(vocab) - 1) + [gguf.TokenType.CONTROL])
    writer.add_token_merges([" ".join(m) for m in VOCAB_MERGES])
    writer.add_bos_token_id(len(vocab) - 1)
    writer.add_eos_token_id(len(vocab) - 1)
    writer.add_add_bos_token(False)

    def put(name: str, tensor: torch.Tensor, permute_heads: int | None = None) -> None:
        array = tensor.detach().float().numpy()
        if permute_heads is not None:
            array = _permute(array, permute_heads)
        # llama.cpp keeps 1-D tensors (norms) in float32
        writer.add_tensor(name, array.astype(np.float16) if f16 and array.ndim > 1 else array)

    sd = model.state_dict()
    put("token_embd.weight", sd["model.embed_tokens.weight"])
    for i in range(layers):
        p = f"model.layers.{i}."
        put(f"blk.{i}.attn_norm.weight", sd[p + "input_layernorm.weight"])
        put(f"blk.{i}.attn_q.weight", sd[p + "self_attn.q_proj.weight"], heads)
        put(f"blk.{i}.attn_k.weight", sd[p + "self_attn.k_proj.weight"], kv)
        put(f"blk.{i}.attn_v.weight", sd[p + "self_attn.v_proj.weight"])
        put(f"blk.{i}.attn_output.weight", sd[p + "self_attn.o_proj.weight"])
        put(f"blk.{i}.ffn_norm.weight", sd[p + "post_attention_layernorm.weight"])
        put(f"blk.{i}.ffn_gate.weight", sd[p + "mlp.gate_proj.weight"])
        put(f"blk.{i}.ffn_up.weight", sd[p + "mlp.up_proj.weight"])
        put(f"blk.{i}.ffn_down.weight", sd[p + "mlp.down_proj.weight"])
    put("output_norm.weight", sd["model.norm.weight"])
    if not tied:
        put("output.weight", sd["lm_head.weight"])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    if f16:  # the file holds the float16-rounded weights
        with torch.no_grad():
            for p in model.parameters():
                if p.dim() > 1:
                    p.copy_(p.half().float())
    return model


def refuse_writes(monkeypatch, directory: Path, code: int, reason: str) -> None:
    """Make every file the model cache creates under ``directory`` fail as the OS would
    (``EROFS``: a read-only filesystem; as root, ``chmod 555`` does not stop writes)."""
    import tempfile

    from zerolock_theory.models import model_cache

    def refused(path) -> bool:
        return path is not None and str(path).startswith(str(directory))

    def wrap(real, where):
        def fake(*args, **kwargs):
            path = where(args, kwargs)
            if refused(path):
                raise OSError(code, reason, str(path))
            return real(*args, **kwargs)
        return fake

    monkeypatch.setattr(model_cache, "open", wrap(open, lambda a, k: a[0]), raising=False)
    for name in ("mkstemp", "mkdtemp"):
        monkeypatch.setattr(tempfile, name, wrap(getattr(tempfile, name), lambda a, k: k.get("dir")))


def write_tiny_gpt2_gguf(path: Path) -> torch.nn.Module:
    """A tiny random GPT-2 (tied head, learned positions) as a float32 GGUF file; returns the model.

    llama.cpp stores the ``Conv1D`` weights transposed (``[out, in]``); transformers undoes it.
    """
    import gguf
    from transformers import GPT2Config, GPT2LMHeadModel

    vocab = tokens()
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(vocab), n_embd=32, n_layer=2, n_head=4, n_positions=1024,
                                       n_inner=128, bos_token_id=len(vocab) - 1, eos_token_id=len(vocab) - 1)).eval()
    cfg = model.config
    writer = gguf.GGUFWriter(str(path), "gpt2")
    writer.add_name("tiny-gpt2")
    writer.add_block_count(cfg.n_layer)
    writer.add_context_length(cfg.n_positions)
    writer.add_embedding_length(cfg.n_embd)
    writer.add_feed_forward_length(cfg.n_inner)
    writer.add_head_count(cfg.n_head)
    writer.add_layer_norm_eps(cfg.layer_norm_epsilon)
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(vocab)
    writer.add_token_types([gguf.TokenType.NORMAL] * (len(vocab) - 1) + [gguf.TokenType.CONTROL])
    writer.add_token_merges([" ".join(m) for m in VOCAB_MERGES])
    writer.add_bos_token_id(len(vocab) - 1)
    writer.add_eos_token_id(len(vocab) - 1)
    sd = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    names = {"ln_1": "attn_norm", "attn.c_attn": "attn_qkv", "attn.c_proj": "attn_output", "ln_2": "ffn_norm",
             "mlp.c_fc": "ffn_up", "mlp.c_proj": "ffn_down"}
    writer.add_tensor("token_embd.weight", sd["transformer.wte.weight"])
    writer.add_tensor("position_embd.weight", sd["transformer.wpe.weight"])
    for i in range(cfg.n_layer):
        for ours, theirs in names.items():
            for kind in ("weight", "bias"):
                array = sd[f"transformer.h.{i}.{ours}.{kind}"]
                transpose = kind == "weight" and not ours.startswith("ln_")
                writer.add_tensor(f"blk.{i}.{theirs}.{kind}", np.ascontiguousarray(array.T) if transpose else array)
    writer.add_tensor("output_norm.weight", sd["transformer.ln_f.weight"])
    writer.add_tensor("output_norm.bias", sd["transformer.ln_f.bias"])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return model
