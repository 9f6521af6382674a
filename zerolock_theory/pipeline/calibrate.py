"""Per-stage costs for the schedule model, timed on this machine with the pipeline's own code.

``measure_costs(config, micro_batches)`` builds the model as every stage does
(``training.loop.build_components``), cuts one batch into m micro-batches and times, for each
chunk k on one micro-batch (median CPU seconds of ``repeats`` calls after one untimed call;
the stages run one intra-op thread, so a cost is the CPU time of the calling thread):

* forward: ``embed`` + ``forward_chunk(k)`` with autograd recording;
* backward: ``h_k.backward(g)`` through the chunk (adapter gradients included);
* readout: ``chunked.readout(h)`` with autograd (ZeroLock runs it twice per micro-batch: on h_k
  and, without gradient, on h_{k−1});
* readout_backward: the gradient through the head back to h;
* loss: ``fused_loss.loss_and_grad``, the terms and dℓ/dz in one pass as ``sliced_backward``
  runs it, with the log-sum-exp of the re-read p_{k−1} (ZeroLock's local loss), or the
  cross-entropy alone (the baselines' global loss);
* update: chunk k's optimizer step;
* send / receive: posting one h_k message on a two-rank gloo group, and the delay until a
  peer process holds it.

The result is a ``Calibration``: one ``StageCosts`` per stage for ZeroLock and one for the
baselines, plus the FLOP rates of the timed matmul work (``flop_rates``) that scale the costs
to other model shapes (``schedule_costs``).
"""

from __future__ import annotations

import datetime
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import torch
import torch.distributed as dist

from zerolock_theory.config import TrainConfig, one_alpha
from zerolock_theory.pipeline.schedule_costs import ModelShape, layer_flops, readout_flops
from zerolock_theory.pipeline.schedule_model import StageCosts
from zerolock_theory.pipeline.stage import split_batch
from zerolock_theory.training.fused_loss import Prev, loss_and_grad

__all__ = ["Calibration", "measure_costs", "measure_link"]

LINK_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class Calibration:
    """Measured per-stage costs (seconds per micro-batch) and the FLOP rates behind them."""

    stages: int
    micro_batches: int
    tokens: int  # tokens per micro-batch
    zerolock: list[StageCosts]
    baseline: list[StageCosts]
    flop_rates: dict[str, float]  # layer_forward, layer_backward, readout, readout_backward (FLOP/s)
    loss_s_per_element: dict[str, float]  # zerolock, baseline: seconds per token·vocabulary entry

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data."""
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Calibration:
        """Inverse of ``to_dict``."""
        return cls(**{**raw, "zerolock": [StageCosts(**c) for c in raw["zerolock"]],
                      "baseline": [StageCosts(**c) for c in raw["baseline"]]})


def _timed(run: Callable[[], None], repeats: int, setup: Callable[[], Any] | None = None) -> float:
    """Median CPU seconds of this thread in ``run(setup())`` over ``repeats`` calls after one
    untimed call (CPU time, so other jobs on the machine do not inflate the costs)."""
    samples = []
    for i in range(repeats + 1):
        state = setup() if setup is not None else None
        tic = time.thread_time()
        run(state) if setup is not None else run()
        if i:
            samples.append(time.thread_time() - tic)
    return statistics.median(samples)


def _link_peer(port: int, shape: tuple[int, ...], dtype: torch.dtype, rounds: int) -> None:
    """Rank 1 of ``measure_link``: receive each message, answer with the time it arrived."""
    timeout = datetime.timedelta(seconds=LINK_TIMEOUT_S)
    store = dist.TCPStore("127.0.0.1", port, is_master=False, timeout=timeout)
    group = dist.ProcessGroupGloo(dist.PrefixStore("calibrate", store), 1, 2, timeout)
    buf = torch.empty(shape, dtype=dtype)
    for i in range(rounds):
        group.recv([buf], 0, 2 * i).wait()
        group.send([torch.tensor([time.monotonic()], dtype=torch.float64)], 0, 2 * i + 1).wait()


def measure_link(shape: tuple[int, ...], dtype: torch.dtype, repeats: int = 5) -> tuple[float, float]:
    """(send, receive): seconds to post one tensor of ``shape`` on gloo, and the delay from the
    post until a peer process holds it (the same monotonic clock on both sides)."""
    import multiprocessing

    timeout = datetime.timedelta(seconds=LINK_TIMEOUT_S)
    store = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False, timeout=timeout)
    peer = multiprocessing.get_context("spawn").Process(target=_link_peer, daemon=True,
                                                        args=(store.port, shape, dtype, repeats + 1))
    peer.start()
    try:
        group = dist.ProcessGroupGloo(dist.PrefixStore("calibrate", store), 0, 2, timeout)
        x, arrived = torch.randn(shape).to(dtype), torch.zeros(1, dtype=torch.float64)
        posts, delays = [], []
        for i in range(repeats + 1):
            tic = time.monotonic()
            work = group.send([x], 1, 2 * i)
            posted = time.monotonic()
            work.wait()
            group.recv([arrived], 1, 2 * i + 1).wait()
            if i:
                posts.append(posted - tic)
                delays.append(max(float(arrived[0]) - posted, 0.0))
    finally:
        peer.join(LINK_TIMEOUT_S)
        if peer.is_alive():
            peer.kill()
    return statistics.median(posts), statistics.median(delays)


def _stage_inputs(chunked: Any, mb: dict[str, torch.Tensor], K: int) -> list[torch.Tensor]:
    """h_0 … h_{K−1} of one micro-batch (no gradient): each stage's input."""
    with torch.no_grad():
        h, ctx = chunked.embed(mb["input_ids"], mb.get("attention_mask"))
        hs = [h]
        for k in range(1, K):
            h = chunked.forward_chunk(k, h, ctx)
            hs.append(h)
    return hs


def _chunk_costs(chunked: Any, mb: dict, h_in: torch.Tensor, k: int, repeats: int) -> tuple[float, float]:
    """(forward, backward) seconds of chunk k on one micro-batch."""
    ids, mask = mb["input_ids"], mb.get("attention_mask")

    def forward() -> torch.Tensor:
        _, ctx = chunked.embed(ids, mask)
        return chunked.forward_chunk(k, h_in.detach().requires_grad_(k > 1), ctx)

    fwd = _timed(forward, repeats)
    bwd = _timed(lambda h: h.backward(torch.ones_like(h) * 1e-3), repeats, forward)
    return fwd, bwd


def _readout_costs(chunked: Any, h: torch.Tensor, repeats: int) -> tuple[float, float]:
    """(readout, readout_backward) seconds on one micro-batch."""
    leaf = h.detach().requires_grad_(True)
    fwd = _timed(lambda: chunked.readout(leaf), repeats)

    def graph() -> torch.Tensor:
        return chunked.readout(h.detach().requires_grad_(True))

    bwd = _timed(lambda z: z.backward(torch.ones_like(z) * 1e-3), repeats, graph)
    return fwd, bwd


def _loss_costs(chunked: Any, config: TrainConfig, h: torch.Tensor, h_prev: torch.Tensor,
                labels: torch.Tensor, repeats: int) -> tuple[float, float]:
    """(local, global) seconds of the loss over the vocabulary, forward and backward."""
    method = config.method
    with torch.no_grad():
        logits, prev = chunked.readout(h), chunked.readout(h_prev)
    n = max(int((labels != -100).sum()), 1)
    kept = torch.empty_like(logits)  # dℓ/dz goes over the re-read target's logits in the stage

    def local() -> None:
        loss_and_grad(logits, labels, Prev(prev), one_alpha(method, "the loss calibration"), method.direction, method.epsilon, 1.0 / n, out=kept)

    def global_() -> None:
        loss_and_grad(logits, labels, None, 1.0, "forward", method.epsilon, 1.0 / n, out=kept)

    return _timed(local, repeats), _timed(global_, repeats)


def _update_cost(optimizer: torch.optim.Optimizer, repeats: int) -> float:
    def setup() -> None:
        for group in optimizer.param_groups:
            for p in group["params"]:
                p.grad = torch.full_like(p, 1e-6)

    return _timed(lambda _: optimizer.step(), repeats, setup)


def measure_costs(config: TrainConfig, micro_batches: int, repeats: int = 5, link: bool = True) -> Calibration:
    """Time every term of ``StageCosts`` for each stage of ``config`` (module docstring)."""
    from zerolock_theory.training.loop import build_components
    from zerolock_theory.training.optimizers import build_optimizer

    K = config.model.chunks
    chunked, _, _, stream = build_components(config, torch.device("cpu"))
    chunked.train()
    mb = split_batch(stream.next_batch(), micro_batches)[0]
    hs = _stage_inputs(chunked, mb, K)
    zl, bl, fwd_rate, bwd_rate = [], [], [], []
    shape = ModelShape.of(chunked.config)
    tokens = int(mb["input_ids"].numel())
    h_last = chunked.forward_chunk(K, hs[-1], _stage_inputs_ctx(chunked, mb)).detach()
    read, read_b = _readout_costs(chunked, h_last, repeats)
    loss_local, loss_global = _loss_costs(chunked, config, h_last, hs[-1], mb["labels"], repeats)
    send, receive = measure_link(tuple(h_last.shape), h_last.dtype, repeats) if link else (0.0, 0.0)
    for k in range(1, K + 1):
        fwd, bwd = _chunk_costs(chunked, mb, hs[k - 1], k, repeats)
        update = _update_cost(build_optimizer(chunked.chunk_parameters(k), config.optim), repeats)
        layers = len(chunked.chunk_layers[k - 1])
        fwd_rate.append(layers * tokens * layer_flops(shape, mb["input_ids"].shape[1]) / fwd)
        bwd_rate.append(layers * tokens * layer_flops(shape, mb["input_ids"].shape[1]) / bwd)
        common = dict(forward=fwd, backward=bwd, readout=read, readout_backward=read_b, send=send,
                      receive=receive, update=update)
        zl.append(StageCosts(**common, loss=loss_local))
        bl.append(StageCosts(**common, loss=loss_global))
    per_token_readout = tokens * readout_flops(shape)
    elements = tokens * shape.vocab
    return Calibration(K, micro_batches, tokens, zl, bl,
                       {"layer_forward": statistics.median(fwd_rate), "layer_backward": statistics.median(bwd_rate),
                        "readout": per_token_readout / read, "readout_backward": per_token_readout / read_b},
                       {"zerolock": loss_local / elements, "baseline": loss_global / elements})


def _stage_inputs_ctx(chunked: Any, mb: dict) -> Any:
    with torch.no_grad():
        return chunked.embed(mb["input_ids"], mb.get("attention_mask"))[1]
