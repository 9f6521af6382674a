"""The hot path of a step: a fixed number of host reads, Ĝ_t's cost and switch, backprop's readouts.

Host synchronisations are counted on CPU by patching the calls that copy a tensor's value to
the host (``Tensor.item``, ``__float__``, ``__int__``, ``tolist``, ``cpu``). AdamW's ``step``
counters are left out: torch keeps them on the host (not capturable), so reading them costs
no device synchronisation.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from zerolock_theory.config import LoraSettings, MethodConfig, ModelConfig, OptimConfig
from zerolock_theory.models import ChunkedLM, attach_adapters
from zerolock_theory.theory.losses import local_loss_from_logits
from zerolock_theory.training import gradients
from zerolock_theory.training.gradients import (
    grad_of,
    grad_sq_tensor,
    half_inner,
    snapshot,
    snapshot_bytes,
)
from zerolock_theory.training.losses import SUM_KEYS, LossSpec, Readout, chunk_loss
from zerolock_theory.training.steps import build_step

V = 64
FEW = ["q_proj"]
MANY = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
READS = ("item", "__float__", "__int__", "tolist", "cpu")


def _step(tiny_lm, method: str, targets: list[str], optim: str = "adamw", chunks: int = 2,
          slice_size: int | None = None, **options):
    torch.manual_seed(0)
    chunked = ChunkedLM(tiny_lm("llama"), chunks)
    attach_adapters(chunked, LoraSettings(rank=4, target_modules=targets, init_b_std=0.05))
    return build_step(chunked, MethodConfig(name=method, alpha=0.5), OptimConfig(name=optim, lr=1e-2),
                      ModelConfig(readout_chunk_size=slice_size), 10, **options)


def _batch(seed: int = 3, rows: int = 4):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, V, (rows, 8), generator=g)
    labels = torch.randint(3, V, (rows, 8), generator=g)
    labels[0, -3:] = -100
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}


@contextlib.contextmanager
def counted_reads(skip: set[int]) -> Iterator[list[str]]:
    """Record every host read of a tensor whose id is not in ``skip``."""
    calls: list[str] = []
    originals = {name: getattr(torch.Tensor, name) for name in READS}

    def wrap(name):
        original = originals[name]

        def read(self, *args, **kwargs):
            if id(self) not in skip:
                calls.append(name)
            return original(self, *args, **kwargs)
        return read

    for name in READS:
        setattr(torch.Tensor, name, wrap(name))
    try:
        yield calls
    finally:
        for name, original in originals.items():
            setattr(torch.Tensor, name, original)


def _reads_in_a_step(step) -> list[str]:
    step.train_step(_batch(1), 0)  # builds the optimizers' state
    counters = {id(s["step"]) for opt in step.optimizers for s in opt.state.values() if "step" in s}
    with counted_reads(counters) as calls:
        step.train_step(_batch(2), 1)
    return calls


@pytest.mark.parametrize("method", ["zerolock", "backprop"])
@pytest.mark.parametrize("optim", ["adamw", "sgd"])
def test_a_step_reads_the_host_a_fixed_number_of_times(tiny_lm, method, optim):
    few = _reads_in_a_step(_step(tiny_lm, method, FEW, optim))
    many = _reads_in_a_step(_step(tiny_lm, method, MANY, optim, chunks=4, slice_size=3))
    assert len(few) == len(many) <= 2, (few, many)  # the halves' counts, then the step's scalars


def test_device_sums_equal_the_host_sums(tiny_lm):
    """``ChunkLoss.totals`` and ``half_inner`` keep the values of the per-term, per-tensor host reads."""
    step = _step(tiny_lm, "zerolock", MANY)
    chunked, batch = step.chunked, _batch(4)
    hidden, ctx = chunked.embed(batch["input_ids"], batch["attention_mask"])
    h1 = chunked.forward_chunk(1, hidden, ctx)
    spec = LossSpec.local(step.method)
    part = chunk_loss(Readout(chunked), spec, h1, hidden, batch["labels"], 1, 29)
    log_prev = torch.log_softmax(chunked.readout(hidden).float(), dim=-1)
    terms = local_loss_from_logits(chunked.readout(h1), batch["labels"], log_prev, 0.5)
    # the fused loss equals the reference to float rounding (its terms are summed in another order)
    want = {key: float(getattr(terms, key).detach().sum()) / 29 for key in SUM_KEYS}
    assert part.sums == pytest.approx(want, rel=1e-5, abs=1e-7)
    part.loss.backward()
    firsts = {}
    for limit in (gradients.GROUP_ELEMENTS, 100):  # one group per chunk; many, and tensors above the limit
        gradients.GROUP_ELEMENTS, kept = limit, gradients.GROUP_ELEMENTS
        firsts[limit] = snapshot(step.params)
        gradients.GROUP_ELEMENTS = kept
    per_tensor = [[grad_of(p).clone() for p in ps] for ps in step.params]
    other = _batch(5)
    hidden2, ctx2 = chunked.embed(other["input_ids"], other["attention_mask"])
    h2 = chunked.forward_chunk(1, hidden2, ctx2)
    chunk_loss(Readout(chunked), spec, h2, hidden2, other["labels"], 1, 29).loss.backward()
    scale = 29 * 29 / (13 * 16)
    for limit, first in firsts.items():
        gradients.GROUP_ELEMENTS, kept = limit, gradients.GROUP_ELEMENTS
        try:
            assert (len(first[0]) == 1) == (limit > 100)  # the limit of 100 splits chunk 1 into groups
            assert max(p.numel() for p in step.params[0]) > 100 or limit > 100  # and some tensor exceeds it
            inner = half_inner(step.params, first, [13, 16], 29)
            sq = [grad_sq_tensor(ps) for ps in step.params]
        finally:
            gradients.GROUP_ELEMENTS = kept
        for ps, firsts, got, got_sq in zip(step.params, per_tensor, inner, sq, strict=True):
            total = 0.0
            for p, g1 in zip(ps, firsts, strict=True):
                g1 = g1.double()
                total += float(torch.dot(g1.reshape(-1), (grad_of(p).double() - g1).reshape(-1)))
            assert float(got) == pytest.approx(scale * total, rel=1e-12, abs=1e-18)
            host_sq = sum(float(grad_of(p).double().square().sum()) for p in ps)
            assert float(got_sq) == pytest.approx(host_sq, rel=1e-5)


@pytest.mark.parametrize("method", ["zerolock", "backprop"])
def test_g_hat_off_keeps_the_update_and_drops_the_copy(tiny_lm, method):
    """``unbiased_grad_sq=False``: the same update bit for bit, Ĝ_t null, no gradient copy kept."""
    on, off = _step(tiny_lm, method, MANY), _step(tiny_lm, method, MANY, unbiased_grad_sq=False)
    kept = []
    import zerolock_theory.training.steps as steps

    original = steps.snapshot
    steps.snapshot = lambda params: kept.append(1) or original(params)
    try:
        m_on, m_off = on.train_step(_batch(5), 0), off.train_step(_batch(5), 0)
        assert len(kept) == 1  # only the run with Ĝ_t copied the first half's gradient
    finally:
        steps.snapshot = original
    for a, b in zip(on.chunked.parameters(), off.chunked.parameters(), strict=True):
        assert torch.equal(a, b)
    assert m_off["train/grad_sq_unbiased"] is None and m_on["train/grad_sq_unbiased"] is not None
    assert {k: v for k, v in m_on.items() if "unbiased" not in k} == {
        k: v for k, v in m_off.items() if "unbiased" not in k}


def test_snapshot_bytes_is_one_gradient_copy(tiny_lm):
    step = _step(tiny_lm, "zerolock", MANY)
    expected = sum(p.numel() * 4 for ps in step.params for p in ps)  # float32 adapters
    assert snapshot_bytes(step.params) == expected > 0
    step.train_step(_batch(6), 0)
    copy = snapshot(step.params)
    assert sum(t.numel() * t.element_size() for ts in copy for t in ts) == expected


class _Launches(TorchDispatchMode):
    """Counts the operators that compute (a kernel launch each on a GPU): not views, not allocations."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += not (func.is_view or func.overloadpacket.__name__ in ("detach", "empty", "empty_like"))
        return func(*args, **(kwargs or {}))


def _bookkeeping_launches(step) -> int:
    for ps in step.params:
        for p in ps:
            p.grad = torch.randn_like(p)  # as a step holds them when it measures
    with _Launches() as launches:
        first = snapshot(step.params)
        half_inner(step.params, first, [13, 16], 29)
        for ps in step.params:
            grad_sq_tensor(ps)
    return launches.count


def test_the_step_bookkeeping_launches_per_group_not_per_tensor(tiny_lm):
    """‖g‖², the kept copy and Ĝ_t cost the same launches with 7 adapted modules a layer as with 1
    (docs/results/gpu_h200_2026-12-04.md: on a GPU the step is bound by launches)."""
    few, many = _step(tiny_lm, "zerolock", FEW), _step(tiny_lm, "zerolock", MANY)
    assert sum(map(len, many.params)) >= 7 * sum(map(len, few.params))
    assert _bookkeeping_launches(few) == _bookkeeping_launches(many) <= 12 * len(few.params)


def test_backprop_reads_out_every_chunk_only_at_its_cadence(tiny_lm):
    """``readout_every=3``: chunk/{k}/ce for k < K at steps 2 and 5 only, equal to the every-step
    run's values there, and the same updates bit for bit."""
    every, sparse = _step(tiny_lm, "backprop", FEW, chunks=3), _step(tiny_lm, "backprop", FEW, chunks=3,
                                                                     readout_every=3)
    for t in range(6):
        a, b = every.train_step(_batch(10 + t), t), sparse.train_step(_batch(10 + t), t)
        assert ("chunk/1/ce" in b) == (t in (2, 5)) and "chunk/3/ce" in b
        assert {k: v for k, v in a.items() if k in b} == b
    for p, q in zip(every.chunked.parameters(), sparse.chunked.parameters(), strict=True):
        assert torch.equal(p, q)
