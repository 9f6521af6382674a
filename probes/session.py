"""Probes for any training loop: ``ProbeSession`` (MATH.md, "Assumption 5", "Proposition 1").

Inputs: a Hugging Face causal LM (a family of ``models.families``: Llama, Mistral, Qwen2/3,
GPT-2; bare or in a peft ``PeftModel``; its own final norm and LM head are the frozen readout;
any ``--model`` source loads with ``zerolock_theory.models.load_model``, e.g.
``load_model("smollm2-135m")`` or a ``.gguf`` file, converted once into the model cache), the
chunk boundaries (``chunks`` for an even split, or ``boundaries``), a probe batch and
optionally the local loss (α, direction, ε). Each ``step(t)`` computes, without touching
gradients or the RNG, the readouts p̃ at the model's current parameters (the logit lens at
the chunk boundaries) and returns the metrics:

* ``probe/minimizer/{k}/…`` at the current parameters (KL/TV to g_k and m_k, gap, CE per
  chunk: the depth quantities of Proposition 1);
* ``probe/stability/{paper,implemented}/…`` for the change since the previous ``step`` call
  (φ, q, ρ, actual change, remainder), from the first call on.

Example (a user's own loop; a complete, tested one is in docs/PROBES.md)::

    with ProbeSession(model, batch, chunks=4, alpha=0.5) as probes:
        metrics = probes.step(0)              # ω^0: p̃ and the minimizer and depth keys
        for t, inputs in enumerate(loader):
            loss = model(**inputs).loss
            loss.backward(); optimizer.step(); optimizer.zero_grad()
            metrics = probes.step(t + 1)      # p̃ at ω^{t+1}, and the terms of the change ω^t → ω^{t+1}

``batch``: ``input_ids`` [B, T], optional ``attention_mask``, and ``labels`` [B, T] holding
the target of each position (already shifted: ``labels[b, t]`` is the token after
``input_ids[b, t]``), −100 where a position is not probed (``ProbeSession.shift_labels``
turns Hugging Face style labels into these). The computation is the one the package's own
probes run (``probes.readout_pass.log_readouts``, ``probes.kernels``,
``probes.stability.kernel_metrics``). ``store`` appends p̃ to a new readout store
(``zerolock_theory.readout_store``; a path that exists and is not an empty directory is refused).
``autocast`` ("bfloat16" or "float16") runs the probe forward under autocast on the model's
device, as ``model.autocast`` does in the trainer (the kernels always work on float32
log-probabilities).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from probes.kernels import cached_sums, supported
from probes.readout_pass import log_readouts
from probes.stability import kernel_metrics
from zerolock_theory.models.chunking import ChunkedLM
from zerolock_theory.training.hooks import ProbeCache
from zerolock_theory.training.losses import Readout

__all__ = ["ProbeSession"]


def _check_batch(batch: dict[str, torch.Tensor], n_embeddings: int, vocab: int) -> None:
    """``ValueError`` (``TypeError`` for a wrong type) unless ``batch`` is a probe batch of this model."""
    missing = [key for key in ("input_ids", "labels") if key not in batch]
    if missing:
        raise ValueError(f"the probe batch needs input_ids and labels, missing {missing}")
    ids, labels, mask = batch["input_ids"], batch["labels"], batch.get("attention_mask")
    for name, value in (("input_ids", ids), ("labels", labels), ("attention_mask", mask)):
        if value is None:
            continue
        if not isinstance(value, torch.Tensor) or value.dtype.is_floating_point or value.dtype.is_complex:
            kind = getattr(value, "dtype", type(value).__name__)
            raise TypeError(f"probe batch {name} must be an integer tensor, got {kind}")
        if value.shape != ids.shape or ids.dim() != 2:
            raise ValueError(f"probe batch {name} must have input_ids' shape [B, T], got {tuple(value.shape)}")
    if ids.numel() and not 0 <= int(ids.min()) <= int(ids.max()) < n_embeddings:
        got = f"[{int(ids.min())}, {int(ids.max())}]"
        raise ValueError(f"probe batch input_ids must lie in [0, {n_embeddings}), got {got}")
    probed = labels[labels != -100]
    if probed.numel() == 0:
        raise ValueError("the probe batch has no labelled position (labels are all -100)")
    if not 0 <= int(probed.min()) <= int(probed.max()) < vocab:
        got = f"[{int(probed.min())}, {int(probed.max())}]"
        raise ValueError(f"probe batch labels must be -100 or lie in [0, {vocab}), got {got}")


class ProbeSession:
    """Readouts, stability, minimizer and depth quantities of a Hugging Face causal LM."""

    def __init__(
        self,
        model: torch.nn.Module,
        batch: dict[str, torch.Tensor],
        *,
        chunks: int = 4,
        boundaries: list[int] | None = None,
        alpha: float = 0.5,
        direction: str = "forward",
        epsilon: float = 0.0,
        probe_epsilon: float = 0.1,
        uniform_p0: bool = False,
        store: str | Path | None = None,
        autocast: str | None = None,
    ) -> None:
        if not 0.0 <= alpha < 1.0:
            raise ValueError(f"alpha must lie in [0, 1) for the probes, got {alpha}")
        if direction not in ("forward", "reverse"):
            raise ValueError(f"direction must be 'forward' or 'reverse', got {direction!r}")
        if not 0.0 <= epsilon < 1.0 or not 0.0 < probe_epsilon < 1.0:
            raise ValueError(f"need 0 <= epsilon < 1 and 0 < probe_epsilon < 1, got {epsilon}, {probe_epsilon}")
        if not isinstance(model, torch.nn.Module):
            raise TypeError(f"model must be a Hugging Face causal LM (torch.nn.Module), got {type(model).__name__}")
        if autocast not in (None, "bfloat16", "float16"):
            raise ValueError(f"autocast must be None, 'bfloat16' or 'float16', got {autocast!r}")
        self.chunked = ChunkedLM(model, chunks, boundaries)
        self.autocast = Readout(self.chunked, getattr(torch, autocast) if autocast else None).autocast
        device = next(model.parameters()).device
        _check_batch(batch, model.get_input_embeddings().num_embeddings, self.chunked.head.out_features)
        self.input_ids = batch["input_ids"].to(device)
        mask = batch.get("attention_mask")
        self.attention_mask = None if mask is None else mask.to(device)
        self.mask = batch["labels"].to(device) != -100
        self.labels = batch["labels"].to(device)[self.mask]
        self.alpha, self.direction, self.uniform_p0 = float(alpha), direction, uniform_p0
        self.eps_m = float(epsilon)
        self.eps_g = float(epsilon) if epsilon > 0 else float(probe_epsilon)
        assert supported(self.alpha, self.eps_g)
        self.cache = ProbeCache()
        self.previous: tuple[int, torch.Tensor] | None = None
        self.store_path = None if store is None else Path(store)
        if self.store_path is not None and self.store_path.exists():
            if not self.store_path.is_dir() or any(self.store_path.iterdir()):
                raise FileExistsError(
                    f"store {self.store_path} already exists and is not an empty directory; "
                    "the session writes a new readout store: pass a new path"
                )
        self.writer: Any = None
        self.logger: Any = None  # a ``ReadoutLogger`` encoding the records, with the store

    @staticmethod
    def shift_labels(labels: torch.Tensor) -> torch.Tensor:
        """Hugging Face labels (``labels[t]`` = token t, shifted inside the model) → per-position targets."""
        out = torch.full_like(labels, -100)
        out[:, :-1] = labels[:, 1:]
        return out

    def __enter__(self) -> ProbeSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def readouts(self) -> torch.Tensor:
        """log p̃ = (log p_0, …, log p_K) at the current parameters: float32 [K+1, N, V]."""
        model = self.chunked.model
        was_training = model.training
        model.eval()
        try:
            return log_readouts(
                self.chunked, self.input_ids, self.attention_mask, self.mask, uniform_p0=self.uniform_p0,
                autocast=self.autocast, cache=self.cache,
            )
        finally:
            model.train(was_training)

    def step(self, step: int) -> dict[str, Any]:
        """Metrics at the current parameters (ω^{step}) and of the change since the last call."""
        current = self.readouts()
        before = self.previous[1] if self.previous is not None else None
        sums = cached_sums(self.cache, step, before, current, self.labels, self.alpha, self.eps_g, self.eps_m)
        out: dict[str, Any] = {"step": step}
        out.update(kernel_metrics(sums, self.alpha, stability=before is not None, direction=self.direction))
        self._store(step, current)
        self.previous = (step, current)
        return out

    def _store(self, step: int, log_p: torch.Tensor) -> None:
        if self.store_path is None:
            return
        from probes.readout_probe import ReadoutLogger
        from zerolock_theory.readout_store import ReadoutWriter

        if self.writer is None:  # the readouts probe's default format, and its reuse of row 0's encoding
            self.logger = ReadoutLogger()
            self.writer = ReadoutWriter(self.store_path, self.logger.meta(*log_p.shape))
        self.writer.append(step, self.logger.encode_record(log_p, self.writer.meta))

    def close(self) -> None:
        """Close the store (if any) and drop the kept readouts."""
        if self.writer is not None:
            self.writer.close()
            self.writer = None
        self.previous = None
