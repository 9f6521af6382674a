"""Pretrain the embedded default model: a tiny Llama on the Python standard library.

Usage::

    python3 scripts/pretrain_embedded.py --out zerolock_theory/embedded

Steps (all seeded, file lists sorted, so a rerun on the same Python gives the same files
up to floating-point nondeterminism of the CPU kernels):

1. collect the standard library's ``.py`` sources (no ``site-packages``, no test
   directories, no ``pydoc_data``: its help topics are the held-out prose corpus), capped
   at ``--corpus-bytes``;
2. train a byte-level BPE tokenizer (``tokenizers``) with ``<|endoftext|>`` (bos/eos/unk)
   and ``<|pad|>``;
3. pretrain a ``LlamaForCausalLM`` (8 layers, so it splits into K = 2, 4 or 8 chunks) with
   AdamW, linear warmup and cosine decay, for a fixed number of steps (the wall time is in the report below);
4. save in Hugging Face format, weights stored as float16 to keep the directory ≤ 8 MB,
   with ``pretrain_report.json`` (losses, steps, seconds, sizes, seed).
"""

from __future__ import annotations

import argparse
import json
import math
import sysconfig
import time
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

EOS, PAD = "<|endoftext|>", "<|pad|>"
EXCLUDED_DIRS = {"site-packages", "test", "tests", "idle_test", "pydoc_data", "__pycache__"}


def parse_args() -> argparse.Namespace:
    """Command-line options; the defaults are the shipped model's settings."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=Path("zerolock_theory/embedded"))
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--vocab-size", type=int, default=4096)
    p.add_argument("--corpus-bytes", type=int, default=6_000_000)
    p.add_argument("--seq-len", type=int, default=256)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--steps", type=int, default=800)
    p.add_argument("--lr", type=float, default=2e-3)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--max-minutes", type=float, default=120.0, help="safety stop (recorded)")
    p.add_argument("--threads", type=int, default=2)
    return p.parse_args()


def collect_corpus(max_bytes: int) -> list[str]:
    """Sorted stdlib ``.py`` sources outside tests/site-packages/pydoc_data, capped in bytes."""
    root = Path(sysconfig.get_paths()["stdlib"])
    texts: list[str] = []
    total = 0
    for path in sorted(root.rglob("*.py")):
        if EXCLUDED_DIRS.intersection(path.relative_to(root).parts):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        size = len(text.encode())
        if total + size <= max_bytes:  # skip what does not fit, keep filling
            texts.append(text)
            total += size
    if not texts:
        raise RuntimeError(f"no .py sources found under {root}")
    return texts


def train_tokenizer(texts: list[str], vocab_size: int) -> PreTrainedTokenizerFast:
    """Byte-level BPE with ``<|endoftext|>`` as bos/eos/unk and ``<|pad|>`` as pad."""
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOS, PAD],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=EOS, eos_token=EOS, unk_token=EOS, pad_token=PAD,
        model_max_length=512,
    )


def pack(token_lists: list[list[int]], eos_id: int, block: int) -> torch.Tensor:
    """Join documents with eos and cut into ``[n, block]`` rows (remainder dropped)."""
    flat: list[int] = []
    for ids in token_lists:
        flat.extend(ids)
        flat.append(eos_id)
    n = len(flat) // block
    return torch.tensor(flat[: n * block], dtype=torch.long).view(n, block)


def build_model(vocab_size: int, tokenizer: PreTrainedTokenizerFast) -> LlamaForCausalLM:
    """The embedded architecture: hidden 128, 8 layers, 4 heads, untied LM head."""
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=128,
        intermediate_size=344,
        num_hidden_layers=8,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=512,
        tie_word_embeddings=False,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return LlamaForCausalLM(config)


def lr_at(step: int, args: argparse.Namespace) -> float:
    """Linear warmup then cosine decay to 10% of the peak."""
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    progress = (step - args.warmup) / max(1, args.steps - args.warmup)
    return args.lr * (0.1 + 0.45 * (1.0 + math.cos(math.pi * progress)))


@torch.no_grad()
def mean_ce(model: LlamaForCausalLM, blocks: torch.Tensor, batch_size: int = 16) -> float:
    """Mean next-token cross-entropy (nats) over packed ``blocks``."""
    model.eval()
    losses = [
        model(input_ids=blocks[i : i + batch_size], labels=blocks[i : i + batch_size]).loss.item()
        for i in range(0, len(blocks), batch_size)
    ]
    model.train()
    return sum(losses) / len(losses)


def train(model: LlamaForCausalLM, blocks: torch.Tensor, args: argparse.Namespace) -> dict:
    """AdamW on random batches of ``blocks``; returns step count, seconds and last loss."""
    gen = torch.Generator().manual_seed(args.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
    start, ema, step = time.time(), None, 0
    for step in range(args.steps):
        for group in opt.param_groups:
            group["lr"] = lr_at(step, args)
        idx = torch.randint(len(blocks), (args.batch_size,), generator=gen)
        loss = model(input_ids=blocks[idx], labels=blocks[idx]).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        ema = loss.item() if ema is None else 0.95 * ema + 0.05 * loss.item()
        elapsed = time.time() - start
        if step % 10 == 0 or step == args.steps - 1:
            print(f"[{step + 1:4d}/{args.steps}] {100 * (step + 1) / args.steps:5.1f}% "
                  f"loss {loss.item():.3f} ema {ema:.3f} {elapsed:6.0f}s", flush=True)
        if elapsed > 60 * args.max_minutes:
            print(f"safety stop after {elapsed:.0f}s", flush=True)
            break
    return {"steps": step + 1, "seconds": round(time.time() - start, 1),
            "final_loss_ema": round(ema, 4), "stopped_early": step + 1 < args.steps}


def heldout_prose_blocks(tokenizer: PreTrainedTokenizerFast, seq_len: int) -> torch.Tensor:
    """Packed blocks of ``pydoc_data.topics`` (English prose, never trained on)."""
    from pydoc_data.topics import topics

    texts = [topics[k] for k in sorted(topics)]
    return pack(tokenizer(texts)["input_ids"], tokenizer.eos_token_id, seq_len)


def portable_tokenizer_config(out: Path) -> None:
    """Name the class ``PreTrainedTokenizerFast`` (known to transformers 4 and 5 alike)."""
    path = out / "tokenizer_config.json"
    config = json.loads(path.read_text())
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    path.write_text(json.dumps(config, indent=2) + "\n")


def main() -> None:
    """Build corpus and tokenizer, pretrain, save the model directory and report."""
    args = parse_args()
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    texts = collect_corpus(args.corpus_bytes)
    corpus_bytes = sum(len(t.encode()) for t in texts)
    print(f"corpus: {len(texts)} files, {corpus_bytes} bytes", flush=True)
    tokenizer = train_tokenizer(texts, args.vocab_size)
    blocks = pack(tokenizer(texts)["input_ids"], tokenizer.eos_token_id, args.seq_len)
    perm = torch.randperm(len(blocks), generator=torch.Generator().manual_seed(args.seed))
    n_val = max(1, len(blocks) // 50)
    val, train_blocks = blocks[perm[:n_val]], blocks[perm[n_val:]]
    print(f"tokens: {blocks.numel()}, blocks: {len(train_blocks)} train / {n_val} val", flush=True)
    model = build_model(len(tokenizer), tokenizer)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"parameters: {n_params}", flush=True)
    stats = train(model, train_blocks, args)
    model = model.to(torch.float16).to(torch.float32)  # evaluate what is stored
    prose = heldout_prose_blocks(tokenizer, 128)[:64]
    args.out.mkdir(parents=True, exist_ok=True)
    model.to(torch.float16).save_pretrained(args.out, safe_serialization=True)
    tokenizer.save_pretrained(args.out)
    portable_tokenizer_config(args.out)
    model = model.to(torch.float32)
    report = {
        "seed": args.seed, "param_count": n_params, "corpus_files": len(texts),
        "corpus_bytes": corpus_bytes, "train_tokens_seen": stats["steps"] * args.batch_size
        * args.seq_len, "vocab_size": len(tokenizer), "seq_len": args.seq_len,
        "batch_size": args.batch_size, "lr": args.lr, **stats,
        "val_ce_stdlib": round(mean_ce(model, val), 4),
        "heldout_ce_pydoc_topics": round(mean_ce(model, prose), 4),
        "log_vocab": round(math.log(len(tokenizer)), 4), "stored_dtype": "float16",
        "torch": torch.__version__,
    }
    (args.out / "pretrain_report.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2), flush=True)


if __name__ == "__main__":
    main()
