"""The fixed probe batch B and the readouts p̃ on it (docs/MATH.md, "Assumption 5").

B is N labelled token positions from the held-out data, chosen by a seed (default: the
run seed), the same tokens at every step. Its ids and labels are saved once as
``run_dir/probe_batch.json``. Every probe shares one B: probes that ask for a different
``(n_positions, seed)`` in the same run get a ``ValueError``.

``readouts(ctx, t)`` computes p̃ = (p_0, …, p_K) on B at the current parameters ω^t, once
per t, and caches it in ``ctx.cache``: log-probabilities, float32, shape [K+1, N, V], rows
in chunk order (row 0 = p_0: the embedding readout, or uniform when ``method.p0 =
"uniform"``; row k = p_k). ``t`` counts completed updates, so ``after_step(ctx, t, ...)``
reads the state after the step as ``readouts(ctx, t + 1)``.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from dataclasses import dataclass
from typing import Any

import torch

from zerolock_theory.theory.targets import label_smooth, one_hot
from zerolock_theory.training.hooks import HookContext, ProbeCache

__all__ = [
    "DEFAULT_N_POSITIONS",
    "ProbeBatch",
    "hidden_states",
    "label_targets",
    "log_readouts",
    "probe_batch",
    "readouts",
    "readouts_now",
    "smoothing_for_g",
]

DEFAULT_N_POSITIONS = 256
BATCH_FILE = "probe_batch.json"


@dataclass(frozen=True)
class ProbeBatch:
    """The fixed probe batch: whole held-out rows, ``labels`` −100 beyond the N positions."""

    input_ids: torch.Tensor  # [B, T] long, on the run's device
    attention_mask: torch.Tensor  # [B, T]
    labels: torch.Tensor  # [B, T], -100 marks "no label"
    n_positions: int
    seed: int

    @property
    def mask(self) -> torch.Tensor:
        """[B, T] bool: the N labelled positions, in row-major order."""
        return self.labels != -100

    @property
    def targets(self) -> torch.Tensor:
        """[N] long: the label y of each probe position."""
        return self.labels[self.mask]

    def as_dict(self) -> dict[str, torch.Tensor]:
        """The batch as the step objects take it (``input_ids``, ``attention_mask``, ``labels``)."""
        return {"input_ids": self.input_ids, "attention_mask": self.attention_mask, "labels": self.labels}


def _write_json(path: Any, payload: dict[str, Any]) -> None:
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(payload), encoding="utf-8")
    os.replace(tmp, path)


def probe_batch(ctx: HookContext, n_positions: int = DEFAULT_N_POSITIONS, seed: int | None = None) -> ProbeBatch:
    """The run's probe batch (built, saved to ``probe_batch.json`` and cached on first use)."""
    seed = ctx.config.run.seed if seed is None else int(seed)
    cached: ProbeBatch | None = ctx.cache.batch
    if cached is not None:
        if (cached.n_positions, cached.seed) != (n_positions, seed):
            raise ValueError(
                f"probes must share one probe batch: it is (n_positions={cached.n_positions}, "
                f"seed={cached.seed}) but a probe asks for (n_positions={n_positions}, seed={seed}); "
                "set the same n_positions and seed on every probe"
            )
        return cached
    raw = ctx.data.probe_batch(n_positions, seed)
    batch = ProbeBatch(
        raw["input_ids"].to(ctx.device),
        raw["attention_mask"].to(ctx.device),
        raw["labels"].to(ctx.device),
        n_positions,
        seed,
    )
    _write_json(
        ctx.run_dir / BATCH_FILE,
        {
            "n_positions": n_positions,
            "seed": seed,
            "input_ids": raw["input_ids"].tolist(),
            "labels": raw["labels"].tolist(),
        },
    )
    ctx.cache.batch = batch
    return batch


@dataclass
class _P0:
    """p_0 of one call and what it depends on: the embedding, final norm and LM head at their
    versions (an optimizer's in-place update or a ``copy_`` bumps ``Tensor._version``), the
    inputs and autocast."""

    params: list[torch.Tensor]
    versions: list[int]
    input_ids: torch.Tensor
    mask: torch.Tensor
    autocast: Any
    row: torch.Tensor | None = None

    @classmethod
    def of(cls, chunked: Any, input_ids: torch.Tensor, mask: torch.Tensor, autocast: Any) -> _P0 | None:
        """The dependencies now; None in training mode (GPT-2's embedding dropout)."""
        if chunked.model.training:
            return None
        params = [p for m in chunked.readout_modules() for p in m.parameters()]
        return cls(params, [p._version for p in params], input_ids, mask, autocast)  # noqa: SLF001

    def same(self, other: _P0 | None) -> bool:
        """Whether ``other`` (the kept record) was computed from exactly these dependencies."""
        return (
            other is not None and other.row is not None and len(other.params) == len(self.params)
            and all(a is b for a, b in zip(self.params, other.params, strict=True))
            and self.versions == other.versions and self.autocast == other.autocast
            and torch.equal(self.input_ids, other.input_ids) and torch.equal(self.mask, other.mask)
        )


@torch.no_grad()
def log_readouts(
    chunked: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None,
    mask: torch.Tensor,
    *,
    uniform_p0: bool = False,
    autocast: Any = None,
    cache: ProbeCache | None = None,
    hiddens_out: list[torch.Tensor] | None = None,
) -> torch.Tensor:
    """log p̃ = (log p_0, …, log p_K) at the ``mask`` positions: float32 [K+1, N, V].

    ``chunked`` is a ``ChunkedLM`` (h_0..h_K by chaining its chunks; readout = its frozen final
    norm and LM head); ``uniform_p0`` replaces p_0 by the uniform distribution; ``autocast``
    is a context-manager factory (e.g. the step object's) or None. ``cache`` (a ``ProbeCache``
    the caller keeps between calls): p_0 is copied from the previous call when nothing it depends on
    changed (``_P0``), instead of reading h_0 out again: the same bits. ``hiddens_out`` (a list)
    receives h_0..h_K on the whole rows, as the forward computed them.
    """
    ctx = autocast if autocast is not None else contextlib.nullcontext
    with ctx():
        hiddens = chunked.hiddens(input_ids, attention_mask)
    if hiddens_out is not None:
        hiddens_out.extend(hiddens)
    now = None if cache is None or uniform_p0 else _P0.of(chunked, input_ids, mask, autocast)
    kept = cache.p0 if cache is not None else None
    reuse = now is not None and now.same(kept)
    out: torch.Tensor | None = None
    for k, hidden in enumerate(hiddens):
        if k == 0 and reuse:
            continue
        with ctx():
            logits = chunked.readout(hidden[mask])
        if out is None:  # each row is written in place: no stacked copy
            out = torch.empty(len(hiddens), *logits.shape, dtype=torch.float32, device=logits.device)
        if k == 0 and uniform_p0:
            out[0].fill_(-math.log(logits.shape[-1]))
        else:
            torch.log_softmax(logits.float(), dim=-1, out=out[k])
    assert out is not None
    if reuse:
        out[0].copy_(kept.row)  # type: ignore[union-attr]
    elif now is not None and cache is not None:
        now.row, now.input_ids, now.mask = out[0].clone(), input_ids.clone(), mask.clone()
        cache.p0 = now
    return out


def _compute_readouts(ctx: HookContext, batch: ProbeBatch, hiddens_out: list[torch.Tensor] | None = None) -> torch.Tensor:
    return log_readouts(
        ctx.chunked, batch.input_ids, batch.attention_mask, batch.mask,
        uniform_p0=ctx.config.method.p0 == "uniform", autocast=ctx.step_fn.autocast, cache=ctx.cache,
        hiddens_out=hiddens_out,
    )


def readouts(
    ctx: HookContext, step: int, n_positions: int = DEFAULT_N_POSITIONS, seed: int | None = None
) -> torch.Tensor:
    """log p̃ at ω^step on the probe batch: float32 [K+1, N, V], computed once per ``step``.

    The caller must ask at the moment the model holds ω^step (``on_start``: ``ctx.start_step``;
    ``after_step(ctx, t, ...)``: t + 1). Only the latest step is cached; callers that need an
    older p̃ keep their own reference. The forward's hidden states are cached with it
    (``hidden_states``).
    """
    batch = probe_batch(ctx, n_positions, seed)
    cached = ctx.cache.readouts
    if cached is not None and cached[0] == step:
        return cached[1]
    hiddens: list[torch.Tensor] = []
    value = _compute_readouts(ctx, batch, hiddens)
    ctx.cache.readouts, ctx.cache.hiddens = (step, value), (step, hiddens)
    return value


def hidden_states(
    ctx: HookContext, step: int, n_positions: int = DEFAULT_N_POSITIONS, seed: int | None = None
) -> list[torch.Tensor]:
    """[h_0, …, h_K] on the probe batch's whole rows at ω^step: the forward behind ``readouts(ctx, step)``.

    Same timing rule as ``readouts`` (ask while the model holds ω^step); computed with the
    readouts when not cached for ``step``.
    """
    cached = ctx.cache.hiddens
    if cached is None or cached[0] != step:
        ctx.cache.readouts = None
        readouts(ctx, step, n_positions, seed)
        cached = ctx.cache.hiddens
    assert cached is not None
    return cached[1]


def readouts_now(ctx: HookContext, n_positions: int = DEFAULT_N_POSITIONS, seed: int | None = None) -> torch.Tensor:
    """log p̃ at the parameters the model holds right now, NOT cached (for probes that move ω).

    Same layout as ``readouts``; the step-keyed cache is neither read nor written.
    """
    return _compute_readouts(ctx, probe_batch(ctx, n_positions, seed))


def label_targets(targets: torch.Tensor, vocab_size: int, epsilon: float) -> torch.Tensor:
    """p_y^ε = (1-ε)·e_y + ε/V for each probe position: float64 [N, V]."""
    return label_smooth(one_hot(targets, vocab_size, torch.float64), epsilon)


def smoothing_for_g(method_epsilon: float, probe_epsilon: float) -> float:
    """ε of p_y in g_k and the paper's R: ``method.epsilon`` when > 0, else the probe's."""
    return float(method_epsilon) if method_epsilon > 0 else float(probe_epsilon)


def objective_smoothing(method_epsilon: float, probe_epsilon: float) -> dict[str, float]:
    """ε of p_y per objective: the paper's R (``smoothing_for_g``) and the implemented R̄
    (``method.epsilon``, what training uses)."""
    return {"paper": smoothing_for_g(method_epsilon, probe_epsilon), "implemented": float(method_epsilon)}


def objective_targets(targets: torch.Tensor, vocab_size: int, method_epsilon: float,
                      probe_epsilon: float) -> dict[str, torch.Tensor]:
    """p_y per objective (``objective_smoothing``), float64 [N, V]: what every probe that
    evaluates both objectives reads."""
    return {objective: label_targets(targets, vocab_size, eps)
            for objective, eps in objective_smoothing(method_epsilon, probe_epsilon).items()}
