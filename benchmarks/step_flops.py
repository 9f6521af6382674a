"""The FLOP model of one training step, ZeroLock against plain backprop (``trainer_step.py`` prints it).

Components, counted with torch's ``FlopCounterMode`` (matmuls and attention) on the run's own
model and batch shape [B, T] (N = B·T tokens):

* the layers of all K chunks, forward F_L and backward B_L (input gradients through the frozen
  weights and the adapters' weight gradients). ZeroLock runs each chunk's backward from its
  own detached input, backprop once through the chain: both are counted as run;
* one readout forward R (final norm and head, [N, d] → [N, V]); its backward to h_k costs R
  again (the head is frozen);
* the loss over V (log-softmax, CE, consistency and their backward): elementwise, no matmul;
  timed per call on [B, T, V] fp32 logits as training runs it (``fused_loss.loss_and_grad``:
  terms and dℓ/dz in one pass, the target given as logits and log-sum-exp, the gradient
  written over a kept buffer), beside the autograd reference (``local_loss_from_logits``
  and autograd), timed interleaved, and beside its floor: one
  pass over the fp32 logits each way, ``clone`` (a new [B, T, V] tensor: on a CPU this
  includes the pages' first touch) and ``copy_`` into a kept one (the bandwidth alone).

Per step::

    ZeroLock  F_L + B_L^zl + (2K + r_0 + r_s)·R + K loss calls     (α, direction, ε of the run)
    backprop  F_L + B_L^bp + 2R + 1 loss call                       (CE only; no per-chunk readouts)

with r_0 = 1 when α < 1 and p_0 is the embedding readout (p_0 of chunk 1), and r_s = K − 1 when
the readout is sliced and α < 1 (log p_{k-1} read out again for k ≥ 2). Modelled time: layer
FLOPs at the rate of a [N, d]·[d, F] GEMM, readout FLOPs at the rate of a [N, d]·[d, V] GEMM
(both measured here, in the run's dtype and autocast), plus the loss calls at their measured
time. The ratio of the modelled times is what the measured ZeroLock ÷ backprop ratio is held to.

Beside the model, the same parts timed as run (``parts_s``: the layers forward and backward of
each method, a readout forward and backward, the loss calls) and the rest of the measured step
(optimizer, Ĝ_t, the framework's overhead): where the model's matmul rates are not reached.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.utils.flop_counter import FlopCounterMode

from zerolock_theory.theory.losses import local_loss_from_logits
from zerolock_theory.training.fused_loss import Prev, loss_and_grad

__all__ = ["StepModel", "flop_table", "step_model"]

METHODS = ("zerolock", "backprop")
CLOCK = [time.perf_counter]
"""The clock of the timed parts: ``trainer_step.py --clock cpu`` sets ``time.process_time``, as for its steps."""


@dataclass(frozen=True)
class StepModel:
    """Counted FLOPs, measured rates and the loss's time of one step shape (module docstring)."""

    tokens: int
    layers_fwd: float
    layers_bwd: dict[str, float]
    readout: float
    readouts: dict[str, int]  # readout-forward equivalents per step
    loss_calls: dict[str, int]
    loss_s: dict[str, float]  # seconds per call (the fused loss, as trained)
    loss_floor_s: float  # clone of [B, T, V] fp32
    loss_ref_s: dict[str, float]  # the reference (local_loss_from_logits and autograd), seconds per call
    copy_floor_s: float  # copy_ of [B, T, V] fp32 into a kept tensor
    layer_rate: float  # FLOP/s
    head_rate: float
    gemms: tuple[str, str]
    counted: dict[str, float]  # FlopCounterMode's total over one train_step
    layers_s: dict[str, float]  # timed: the layers forward and backward of each method
    readout_s: float  # timed: one readout forward and backward

    def parts_s(self, method: str) -> float:
        """Timed seconds of the model's parts in one step of ``method``."""
        return (self.layers_s[method] + self.readouts[method] * self.readout_s / 2
                + self.loss_calls[method] * self.loss_s[method])

    def flops(self, method: str) -> float:
        """Modelled matmul FLOPs of one step of ``method``."""
        return self.layers_fwd + self.layers_bwd[method] + self.readouts[method] * self.readout

    def seconds(self, method: str) -> float:
        """Modelled seconds of one step of ``method``."""
        layers = (self.layers_fwd + self.layers_bwd[method]) / self.layer_rate
        return layers + self.readouts[method] * self.readout / self.head_rate + self.loss_calls[method] * self.loss_s[method]


def _count(fn: Callable[[], object]) -> float:
    with FlopCounterMode(display=False) as counter:
        fn()
    return float(counter.get_total_flops())


def _timed(fn: Callable[[], object], device: torch.device, repeats: int = 5) -> float:
    return _interleaved([fn], device, repeats)[0]


def _interleaved(fns: list[Callable[[], object]], device: torch.device, repeats: int = 5) -> list[float]:
    """Median seconds of each of ``fns``, called in turn ``repeats`` times after one warm-up call each."""
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    times: list[list[float]] = [[] for _ in fns]
    for r in range(repeats + 1):
        for fn, kept in zip(fns, times, strict=True):
            sync()
            tic = CLOCK[0]()
            fn()
            sync()
            if r:
                kept.append(CLOCK[0]() - tic)
    return [statistics.median(t) for t in times]


def _layer_flops(run, batch) -> tuple[float, dict[str, float], dict[str, float]]:
    """F_L, B_L of each method (counted with their own backward structure), and each one's seconds."""
    chunked, ids, mask = run.chunked, batch["input_ids"], batch.get("attention_mask")
    params = [p for p in chunked.parameters() if p.requires_grad]

    def chain() -> None:
        chunked.hiddens(ids, mask)[-1].float().sum().backward()

    def local() -> None:
        hidden, ctx = chunked.embed(ids, mask)
        for k in range(1, chunked.num_chunks + 1):
            hidden = chunked.forward_chunk(k, hidden.detach(), ctx)
            hidden.float().sum().backward()

    with torch.no_grad():
        fwd = _count(lambda: chunked.hiddens(ids, mask))
    with run.step_fn.autocast():
        bwd = {"backprop": _count(chain) - fwd, "zerolock": _count(local) - fwd}
        seconds = {"backprop": _timed(chain, run.device), "zerolock": _timed(local, run.device)}
    for p in params:
        p.grad = None
    return fwd, bwd, seconds


def _readout_seconds(run, hidden: torch.Tensor) -> float:
    leaf = hidden.clone().requires_grad_(True)

    def call() -> None:
        with run.step_fn.autocast():
            run.chunked.readout(leaf).float().sum().backward()
        leaf.grad = None
    return _timed(call, run.device)


def _loss_seconds(shape: tuple[int, int, int], spec: tuple[float, str, float],
                  device: torch.device) -> tuple[float, float]:
    """Seconds per call of the fused loss (as trained) and of the reference, interleaved."""
    alpha, direction, epsilon = spec
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(shape, generator=g).to(device)
    labels = torch.randint(0, shape[-1], shape[:2], generator=g).to(device)
    prev_logits = torch.randn(shape, generator=g).to(device) if alpha < 1 else None
    prev = None  # chunk k−1's logits with the norm its own loss left (as for k ≥ 2 in a step)
    if prev_logits is not None:
        prev = Prev(prev_logits, loss_and_grad(prev_logits, labels, None, 1.0, "forward", 0.0, grad=False)[2])
    log_prev = torch.log_softmax(prev_logits, -1) if prev_logits is not None else None
    leaf, kept = logits.clone().requires_grad_(True), torch.empty_like(logits)
    n = shape[0] * shape[1]

    def fused() -> None:  # dℓ/dz over a kept buffer, as training writes it over the target's logits
        loss_and_grad(logits, labels, prev, alpha, direction, epsilon, 1.0 / n, out=kept)

    def reference() -> None:
        (local_loss_from_logits(leaf, labels, log_prev, alpha, direction, epsilon).loss.sum() / n).backward()
        leaf.grad = None
    fused_s, reference_s = _interleaved([fused, reference], device)
    return fused_s, reference_s


def _gemm_rate(m: int, k: int, n: int, run, device: torch.device) -> float:
    dtype = next(p for p in run.chunked.parameters()).dtype
    a, b = torch.randn(m, k, device=device, dtype=dtype), torch.randn(k, n, device=device, dtype=dtype)
    with run.step_fn.autocast():
        seconds = _timed(lambda: a @ b, device, repeats=9)
    return 2.0 * m * k * n / seconds


def step_model(zl_run, bp_run, batch_size: int, seq_len: int) -> StepModel:
    """The FLOP model of the two runs' steps (module docstring); steps both runs once (counted)."""
    device, cfg = zl_run.device, zl_run.chunked.model.config
    batch = {k: v.to(device) for k, v in zl_run.stream.next_batch().items()}
    K, N = zl_run.chunked.num_chunks, batch_size * seq_len
    d, V = cfg.hidden_size, cfg.vocab_size
    ffn = getattr(cfg, "intermediate_size", None) or 4 * d
    fwd, bwd, layers_s = _layer_flops(zl_run, batch)
    with torch.no_grad():
        hidden = torch.zeros(batch_size, seq_len, d, device=device, dtype=next(zl_run.chunked.parameters()).dtype)
        readout = _count(lambda: zl_run.chunked.readout(hidden))
    readout_s = _readout_seconds(zl_run, hidden)
    method = zl_run.config.method
    r0 = int(method.alpha < 1 and method.p0 == "embedding")
    rs = K - 1 if zl_run.config.model.readout_chunk_size and method.alpha < 1 else 0
    shape = (batch_size, seq_len, V)
    loss = {"zerolock": _loss_seconds(shape, (method.alpha, method.direction, method.epsilon), device),
            "backprop": _loss_seconds(shape, (1.0, "forward", method.epsilon), device)}
    loss_s, loss_ref_s = ({m: t[i] for m, t in loss.items()} for i in (0, 1))
    x, kept = torch.randn(N, V, device=device), torch.empty(N, V, device=device)
    # one read and one write of N·V fp32: a pass each way, into a new tensor and into a kept one
    floor, copy_floor = _interleaved([lambda: x.clone(), lambda: kept.copy_(x)], device)
    counted = {}
    for name, run in (("zerolock", zl_run), ("backprop", bp_run)):
        step_batch = {k: v.to(device) for k, v in run.stream.next_batch().items()}
        counted[name] = _count(lambda run=run, b=step_batch: run.step_fn.train_step(b, 10_000 - 1))
    return StepModel(N, fwd, bwd, readout, {"zerolock": 2 * K + r0 + rs, "backprop": 2},
                     {"zerolock": K, "backprop": 1}, loss_s, floor, loss_ref_s, copy_floor,
                     _gemm_rate(N, d, ffn, zl_run, device),
                     _gemm_rate(N, d, V, zl_run, device), (f"[{N}x{d}]·[{d}x{ffn}]", f"[{N}x{d}]·[{d}x{V}]"), counted,
                     layers_s, readout_s)


def flop_table(model: StepModel, measured: dict[str, float], chunks: int) -> str:
    """The model beside the measured step times (seconds by method), as text."""
    g = 1e9
    lines = [f"K={chunks}, N={model.tokens} tokens; matmul rates: layers {model.layer_rate / g:.1f} GFLOP/s "
             f"({model.gemms[0]}), head {model.head_rate / g:.1f} GFLOP/s ({model.gemms[1]}); one readout "
             f"{model.readout / g:.3f} GFLOP",
             f"{'method':<9} {'step ms':>8} {'layers fwd GF':>13} {'layers bwd GF':>13} {'readouts':>9} "
             f"{'loss calls x ms':>15} {'model GF':>9} {'counted GF':>10} {'modelled ms':>11} {'parts ms':>8} "
             f"{'rest ms':>7}"]
    for m in METHODS:
        lines.append(f"{m:<9} {measured[m] * 1e3:>8.1f} {model.layers_fwd / g:>13.3f} {model.layers_bwd[m] / g:>13.3f} "
                     f"{model.readouts[m]:>9d} {model.loss_calls[m]:>5d} x {model.loss_s[m] * 1e3:>7.2f} "
                     f"{model.flops(m) / g:>9.3f} {model.counted[m] / g:>10.3f} {model.seconds(m) * 1e3:>11.1f} "
                     f"{model.parts_s(m) * 1e3:>8.1f} {(measured[m] - model.parts_s(m)) * 1e3:>7.1f}")
    ratio = measured["zerolock"] / measured["backprop"]
    modelled = model.seconds("zerolock") / model.seconds("backprop")
    parts = model.parts_s("zerolock") / model.parts_s("backprop")
    lines.append(f"ZeroLock / backprop step time: measured {ratio:.3f}, modelled {modelled:.3f} "
                 f"(measured / modelled {ratio / modelled:.3f}), of the timed parts {parts:.3f}; FLOP ratio {model.flops('zerolock') / model.flops('backprop'):.3f}")
    lines.append(f"loss over V per call, floor {model.loss_floor_s * 1e3:.2f} ms (clone; copy_ into a kept "
                 f"tensor {model.copy_floor_s * 1e3:.2f} ms):")
    lines.append(f"  {'method':<9} {'fused ms':>9} {'x floor':>8} {'x copy':>7} {'reference ms':>13} {'x floor':>8} "
                 f"{'reference / fused':>18}")
    for m in METHODS:
        fused, ref = model.loss_s[m], model.loss_ref_s[m]
        lines.append(f"  {m:<9} {fused * 1e3:>9.2f} {fused / model.loss_floor_s:>8.2f} "
                     f"{fused / model.copy_floor_s:>7.2f} {ref * 1e3:>13.2f} {ref / model.loss_floor_s:>8.2f} "
                     f"{ref / fused:>18.2f}")
    return "\n".join(lines)
