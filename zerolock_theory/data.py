"""Language-model data: load texts, pack them into blocks, split, and stream batches.

Every batch is a dict of ``[B, T]`` long tensors: ``input_ids``, ``attention_mask`` and
``labels``, where ``labels[:, t]`` is the token that FOLLOWS position t (already shifted:
a packed block of T+1 tokens gives ``block[:-1]`` as input and ``block[1:]`` as labels);
-100 marks "no label".

Determinism: the train/eval split (train/validation/test with ``test_fraction`` > 0) depends
only on ``DataConfig.seed``; the training order
of :class:`DataStream` is one ``torch.Generator`` permutation per epoch seeded with
(seed, epoch), and its position saves and loads through ``state_dict``.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any

import torch

from zerolock_theory.corpus import load_texts
from zerolock_theory.data_config import DataConfig

__all__ = [
    "IGNORE_INDEX", "DataConfig", "DataStream", "LMData", "blocks_to_batch", "load_texts",
    "pack_blocks", "pad_batch",
]

IGNORE_INDEX = -100


def blocks_to_batch(blocks: torch.Tensor) -> dict[str, torch.Tensor]:
    """``[B, T+1]`` packed blocks -> shifted batch with an all-ones attention mask."""
    inputs = blocks[:, :-1].clone()
    return {"input_ids": inputs, "attention_mask": torch.ones_like(inputs),
            "labels": blocks[:, 1:].clone()}


def pad_batch(
    sequences: list[list[int]], pad_token_id: int, padding_side: str = "right"
) -> dict[str, torch.Tensor]:
    """Pad token sequences of unequal length into one batch.

    ``attention_mask`` is 0 on pads; ``labels[t]`` is the next real token, -100 on pads and
    on each sequence's last real token (nothing follows it).
    """
    if padding_side not in ("left", "right"):
        raise ValueError(f"padding_side must be 'left' or 'right', got {padding_side!r}")
    if not sequences or any(len(s) == 0 for s in sequences):
        raise ValueError("pad_batch needs at least one sequence and no empty sequences")
    width = max(len(s) for s in sequences)
    shape = (len(sequences), width)
    batch = {"input_ids": torch.full(shape, pad_token_id, dtype=torch.long),
             "attention_mask": torch.zeros(shape, dtype=torch.long),
             "labels": torch.full(shape, IGNORE_INDEX, dtype=torch.long)}
    for row, seq in enumerate(sequences):
        start = 0 if padding_side == "right" else width - len(seq)
        span = slice(start, start + len(seq))
        batch["input_ids"][row, span] = torch.tensor(seq, dtype=torch.long)
        batch["attention_mask"][row, span] = 1
        batch["labels"][row, start : start + len(seq) - 1] = torch.tensor(seq[1:], dtype=torch.long)
    return batch


def _tokenize(tokenizer: Any, texts: list[str]) -> list[list[int]]:
    """Token ids without bos/eos added by the tokenizer (packing adds eos itself)."""
    return list(tokenizer(texts, add_special_tokens=False, verbose=False)["input_ids"])


def pack_blocks(token_lists: list[list[int]], eos_id: int, width: int) -> torch.Tensor:
    """Join documents, each followed by ``eos_id``, and cut into ``[n, width]`` blocks.

    Blocks do not overlap; the final ``len % width`` tokens are left out.
    """
    flat = [tok for ids in token_lists for tok in (*ids, eos_id)]
    n_blocks = len(flat) // width
    return torch.tensor(flat[: n_blocks * width], dtype=torch.long).view(n_blocks, width)


class LMData:
    """Packed blocks of one corpus, split once into train and held-out parts by the seed.

    Attributes: ``train_blocks`` / ``eval_blocks`` / ``test_blocks`` (``[n, seq_len+1]``),
    ``n_train``, ``n_eval``, ``n_test`` (0 unless ``test_fraction`` > 0), ``vocab_size``
    (``len(tokenizer)``), ``pad_token_id`` (eos if none).

    One permutation by ``config.seed`` orders the blocks: the first ``n_eval`` are held out
    (the validation split), the next ``n_test`` the test split, the rest train. With
    ``test_fraction = 0`` this is the two-way split, block for block.
    """

    def __init__(self, config: DataConfig, tokenizer: Any) -> None:
        """Tokenize ``config.source``, pack, split; ``ValueError`` if too few blocks."""
        eos = tokenizer.eos_token_id
        if eos is None:
            raise ValueError("the tokenizer has no eos token; documents are joined with eos")
        self.config = config
        self.vocab_size: int = len(tokenizer)
        pad = tokenizer.pad_token_id
        self.pad_token_id: int = int(eos if pad is None else pad)
        token_lists = _tokenize(tokenizer, load_texts(config.source, config.text_field))
        width = config.seq_len + 1
        blocks = pack_blocks(token_lists, eos, width)
        n_blocks = len(blocks)
        self.n_eval: int = max(1, math.ceil(config.eval_fraction * n_blocks))
        self.n_test: int = math.ceil(config.test_fraction * n_blocks) if config.test_fraction > 0 else 0
        self.n_train: int = max(0, n_blocks - self.n_eval - self.n_test)
        if n_blocks == 0:
            raise ValueError(f"the corpus is too short: it gives no block of {width} tokens "
                             "(seq_len + 1); use more text or a smaller data.seq_len")
        need_eval = config.eval_batches * config.batch_size
        if self.n_train < config.batch_size or self.n_eval < need_eval or 0 < self.n_test < need_eval:
            raise ValueError(
                f"too few blocks: the corpus gives {n_blocks} blocks of {width} tokens; "
                f"{self.n_train} train blocks for batch_size {config.batch_size} and "
                f"{self.n_eval} held-out blocks for {config.eval_batches} eval batches "
                f"(need {need_eval}), {self.n_test} test blocks (0 or >= {need_eval}); use more text, a smaller seq_len, batch_size or "
                f"eval_batches, or a larger eval_fraction")
        perm = torch.randperm(n_blocks, generator=torch.Generator().manual_seed(config.seed))
        held = self.n_eval + self.n_test
        self.eval_blocks: torch.Tensor = blocks[perm[: self.n_eval]]
        self.test_blocks: torch.Tensor = blocks[perm[self.n_eval : held]]
        self.train_blocks: torch.Tensor = blocks[perm[held:]]
        bsz = config.batch_size
        self._eval = [blocks_to_batch(self.eval_blocks[i * bsz : (i + 1) * bsz])
                      for i in range(config.eval_batches)]
        self._test = [blocks_to_batch(self.test_blocks[i * bsz : (i + 1) * bsz])
                      for i in range(config.eval_batches)] if self.n_test else []

    def eval_batches(self) -> list[dict[str, torch.Tensor]]:
        """The fixed held-out batches (fresh copies, identical every call)."""
        return [{k: v.clone() for k, v in batch.items()} for batch in self._eval]

    def test_batches(self) -> list[dict[str, torch.Tensor]]:
        """The fixed test batches (``eval_batches`` of them; none without a test split)."""
        return [{k: v.clone() for k, v in batch.items()} for batch in self._test]

    def probe_batch(self, n_positions: int, seed: int) -> dict[str, torch.Tensor]:
        """Held-out rows chosen by ``seed`` holding exactly ``n_positions`` labels.

        Whole rows of ``seq_len`` positions; the last row's labels beyond ``n_positions``
        are -100. Raises ``ValueError`` if the held-out part has fewer positions.
        """
        seq_len = self.config.seq_len
        available = self.n_eval * seq_len
        if not 1 <= n_positions <= available:
            raise ValueError(f"n_positions must lie in [1, {available}] "
                             f"(held-out blocks x seq_len), got {n_positions}")
        rows = math.ceil(n_positions / seq_len)
        order = torch.randperm(self.n_eval, generator=torch.Generator().manual_seed(seed))
        batch = blocks_to_batch(self.eval_blocks[order[:rows]])
        batch["labels"].view(-1)[n_positions:] = IGNORE_INDEX
        return batch


class DataStream:
    """Endless, resumable stream of training batches over ``data.train_blocks``.

    Epoch e visits the train blocks in a permutation drawn from a generator seeded with
    (seed, e). A tail too short for a full batch is dropped and counted in
    ``dropped_blocks``; ``epoch`` counts completed epochs.
    """

    def __init__(self, data: LMData, batch_size: int, seed: int) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
        if batch_size > data.n_train:
            raise ValueError(f"batch_size {batch_size} exceeds the {data.n_train} train blocks")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"seed must be an int, got {seed!r}")
        self.data, self.batch_size, self.seed = data, batch_size, seed
        self.epoch = 0
        self.offset = 0
        self.dropped_blocks = 0
        self.batches = 0
        self._perm = self._permutation(0)

    def _permutation(self, epoch: int) -> torch.Tensor:
        # The CPU generator keeps only 32 seed bits, so (seed, epoch) is hashed into them.
        key = hashlib.sha256(f"zerolock-stream:{self.seed}:{epoch}".encode()).digest()
        gen = torch.Generator().manual_seed(int.from_bytes(key[:4], "little"))
        return torch.randperm(self.data.n_train, generator=gen)

    def next_batch(self) -> dict[str, torch.Tensor]:
        """The next ``batch_size`` train blocks as a shifted batch."""
        idx = self._perm[self.offset : self.offset + self.batch_size]
        self.offset += self.batch_size
        self.batches += 1
        left = self.data.n_train - self.offset
        if left < self.batch_size:  # epoch done: count the dropped tail, start the next
            self.dropped_blocks += left
            self.epoch += 1
            self.offset = 0
            self._perm = self._permutation(self.epoch)
        return blocks_to_batch(self.data.train_blocks[idx])

    def state_dict(self) -> dict[str, int]:
        """JSON-serialisable position: epoch, offset in the epoch, counters, identity."""
        return {"seed": self.seed, "batch_size": self.batch_size, "n_train": self.data.n_train,
                "epoch": self.epoch, "offset": self.offset,
                "dropped_blocks": self.dropped_blocks, "batches": self.batches}

    def load_state_dict(self, state: dict) -> None:
        """Restore a position saved by :meth:`state_dict` (same data, seed and batch size)."""
        missing = set(self.state_dict()) - set(state)
        if missing:
            raise ValueError(f"stream state lacks {sorted(missing)}")
        mine = {"seed": self.seed, "batch_size": self.batch_size, "n_train": self.data.n_train}
        for key, value in mine.items():
            if int(state[key]) != value:
                raise ValueError(f"stream state has {key}={state[key]}, this stream has {value}")
        if not 0 <= int(state["offset"]) <= self.data.n_train - self.batch_size:
            raise ValueError(f"stream state offset {state['offset']} is out of range")
        self.epoch, self.offset = int(state["epoch"]), int(state["offset"])
        self.dropped_blocks, self.batches = int(state["dropped_blocks"]), int(state["batches"])
        self._perm = self._permutation(self.epoch)
