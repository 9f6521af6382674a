"""Probe ``readouts``: log p̃^t on the probe batch at every step, into ``run_dir/readouts/``.

Record t holds p̃^t = (p_0, …, p_K) at ω^t (t = completed updates: t = 0 is written by
``on_start``, t + 1 by ``after_step(ctx, t)``), for t ≡ 0 (mod ``every``) and the last step.
Modes (``mode``):

* ``"topk"``: the k largest probabilities (float16) and their token ids (int32) per position
  and row, plus the exact remaining tail mass (float32):
  (K+1)·N·(k·(2+4)+4) bytes per step;
* ``"full"``: every probability in float16 by default, or with ``dtype = "float32"`` the
  log-probabilities exactly as the probes saw them (for exact offline recomputation):
  (K+1)·N·V·2 (or ·4) bytes per step before compression;
* ``"auto"`` (default): ``full`` when V ≤ ``full_max_vocab``, else ``topk``.

Each record is one Parquet shard (zstd-compressed, written atomically); the format and the
reader (``ReadoutStore``) are in ``zerolock_theory.readout_store``, and pandas or pyarrow read the directory
without this package. On resume the store is truncated after the checkpoint's step. The
probe logs no metrics; it prints its uncompressed bytes per step once at start.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import torch

from probes.readout_pass import DEFAULT_N_POSITIONS, readouts
from probes.registry import register
from zerolock_theory.readout_store import ReadoutStore, ReadoutWriter, payload_bytes
from zerolock_theory.training.hooks import HookContext

__all__ = ["STORE_DIR", "ReadoutLogger", "ReadoutStore", "encode", "store_meta", "topk"]

STORE_DIR = "readouts"
MODES = ("auto", "topk", "full")
FIRST_ROW_BYTES = 64 << 20  # the readout logger keeps p_0 up to this size to reuse its encoding


def encode(log_probs: torch.Tensor, meta: dict[str, Any]) -> dict[str, np.ndarray]:
    """The stored arrays of one record from log p̃ [K+1, N, V] (see the module docstring)."""
    if meta["mode"] == "full":
        if meta["dtype"] == "float32":
            return {"log_probs": log_probs.float().cpu().numpy()}
        return {"probs": log_probs.exp().to(torch.float16).cpu().numpy()}
    k = meta["topk"]
    top, idx = topk(log_probs, k + 1)
    return {
        "indices": idx[..., :k].to(torch.int32).cpu().numpy(),
        "tail": _tail(log_probs, idx[..., :k], top[..., k:]).float().cpu().numpy(),
        "probs": top[..., :k].exp().to(torch.float16).cpu().numpy(),
    }


def topk(x: torch.Tensor, k: int, groups: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    """The k largest values along the last axis, descending, and their indices: ``torch.topk``'s values.

    Two passes over small arrays instead of one over V: the maxima of ``groups`` strided
    groups of V/``groups`` coordinates, the k groups with the largest maxima, then the top k
    of their k·``groups`` coordinates. Exact: a value outside those groups has k group maxima
    (k distinct coordinates) at least as large. Which of several exactly equal values is
    listed first (or last, at the k-th place) is unspecified, as in ``torch.topk``.
    """
    vocab = x.shape[-1]
    width = vocab // groups
    if vocab % groups or width < 4 * k:  # too small to gain
        return torch.topk(x, k, dim=-1)
    gmax = x.reshape(*x.shape[:-1], groups, width).amax(-2)  # group j = {j, j + width, ...}
    _, best = torch.topk(gmax, k, dim=-1, sorted=False)
    cand = (best.unsqueeze(-1) + width * torch.arange(groups, device=x.device)).flatten(-2)
    top, j = torch.topk(x.gather(-1, cand), k, dim=-1)
    return top, cand.gather(-1, j)


def _tail(log_probs: torch.Tensor, idx: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    """The mass outside ``idx``: exp(logsumexp(log p̃ off ``idx``)); ``m`` [..., 1] is the largest value off ``idx``.

    The same operations as ``torch.logsumexp`` on the log-probabilities with ``idx`` set to
    −inf (bit for bit: max m, Σ exp(L − m) with exact zeros at ``idx``, log, + m), without
    the masked copy or a second pass for the max.
    """
    m = m.masked_fill(m.abs() == float("inf"), 0.0)
    terms = log_probs.sub(m).exp_().scatter_(-1, idx, 0.0)
    return terms.sum(-1).log_().add_(m.squeeze(-1)).exp_()


def store_meta(mode: str, topk: int, full_max_vocab: int, dtype: str, rows: int, n: int, vocab: int) -> dict[str, Any]:
    """The store's ``meta`` for readouts of shape [rows, n, vocab] (see the module docstring)."""
    full = mode == "full" or (mode == "auto" and vocab <= full_max_vocab)
    meta = {"format": "zerolock-readouts", "version": 2, "rows": rows, "n_positions": n, "vocab_size": vocab}
    if full:
        return {**meta, "mode": "full", "dtype": dtype}
    if topk >= vocab:
        raise ValueError(f"readouts.topk = {topk} must be < V = {vocab}; use mode = 'full'")
    return {**meta, "mode": "topk", "topk": topk, "dtype": "float16", "tail_dtype": "float32"}


@register("readouts")
@dataclass
class ReadoutLogger:
    """Append p̃^t to the readout store every ``every`` steps."""

    name: ClassVar[str] = "readouts"
    every: int = 1
    mode: str = "auto"  # auto | topk | full
    topk: int = 32
    full_max_vocab: int = 256  # auto: full distributions up to this vocabulary size
    dtype: str = "float16"  # full mode: float16 or float32
    n_positions: int = DEFAULT_N_POSITIONS
    seed: int | None = None  # probe batch seed; None = run seed

    def __post_init__(self) -> None:
        if self.every < 1:
            raise ValueError(f"readouts.every must be >= 1, got {self.every}")
        if self.mode not in MODES:
            raise ValueError(f"readouts.mode must be one of {MODES}, got {self.mode!r}")
        if self.topk < 1:
            raise ValueError(f"readouts.topk must be >= 1, got {self.topk}")
        if self.dtype not in ("float16", "float32"):
            raise ValueError(f"readouts.dtype must be 'float16' or 'float32', got {self.dtype!r}")
        self.writer: ReadoutWriter | None = None
        self.total_steps = 0
        self.first: tuple[torch.Tensor, dict, dict[str, np.ndarray]] | None = None  # row 0, meta, its encoding

    def meta(self, rows: int, n: int, vocab: int) -> dict[str, Any]:
        """The store's ``meta`` for readouts of shape [rows, n, vocab] in this logger's format."""
        return store_meta(self.mode, self.topk, self.full_max_vocab, self.dtype, rows, n, vocab)

    def _due(self, t: int) -> bool:
        return t % self.every == 0 or t == self.total_steps

    def _write(self, ctx: HookContext, t: int) -> None:
        assert self.writer is not None
        self.writer.append(t, self.encode_record(readouts(ctx, t, self.n_positions, self.seed), self.writer.meta))

    def encode_record(self, log_p: torch.Tensor, meta: dict[str, Any]) -> dict[str, np.ndarray]:
        """``encode``, reusing the previous record's row 0 when it is the same bit for bit.

        p_0 (the frozen embedding readout, or uniform) does not change during a run, and rows
        are encoded independently. Row 0 is kept when it takes at most ``FIRST_ROW_BYTES``.
        """
        if self.first is not None and self.first[1] == meta and torch.equal(self.first[0], log_p[0]):
            rest = encode(log_p[1:], meta)
            return {name: np.concatenate([self.first[2][name], value]) for name, value in rest.items()}
        arrays = encode(log_p, meta)
        if log_p[0].numel() * log_p.element_size() <= FIRST_ROW_BYTES:
            self.first = (log_p[0].clone(), dict(meta), {name: value[:1].copy() for name, value in arrays.items()})
        return arrays

    def on_start(self, ctx: HookContext) -> None:
        """Open (and on resume truncate) the store; write p̃ at the start step."""
        self.total_steps = ctx.config.run.steps
        start = ctx.start_step
        rows, n, vocab = readouts(ctx, start, self.n_positions, self.seed).shape
        meta = self.meta(rows, n, vocab)
        self.writer = ReadoutWriter(ctx.run_dir / STORE_DIR, meta, keep_through=start if start > 0 else None)
        per_step = payload_bytes(meta)
        records = len([t for t in range(start, self.total_steps + 1) if self._due(t)])
        what = f"top-{meta['topk']}" if meta["mode"] == "topk" else f"full {meta['dtype']}"
        print(
            f"probe readouts: {what} Parquet store, {per_step:,} bytes per recorded step before compression "
            f"((K+1)={rows} x N={n}, V={vocab}), ~{per_step * records / 2**20:.1f} MiB for {records} records"
        )
        if self.writer.dropped:
            print(f"probe readouts: dropped a torn tail of the store: {self.writer.dropped}")
        if self._due(start) and start not in self.writer.steps:
            self._write(ctx, start)

    def after_step(self, ctx: HookContext, step: int, metrics: dict[str, Any]) -> dict[str, Any]:
        """Record p̃^{t+1} when due; no metrics."""
        if self._due(step + 1):
            self._write(ctx, step + 1)
        return {}

    def on_checkpoint(self, ctx: HookContext, step: int) -> None:
        """Sync the store, so a resume from this checkpoint finds every step recorded through it."""
        if self.writer is not None:
            self.writer.sync()

    def on_end(self, ctx: HookContext) -> None:
        """Close the store."""
        self.first = None
        if self.writer is not None:
            self.writer.close()
