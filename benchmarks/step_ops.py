"""Benchmark (not a test): operators dispatched per training step, the launch count a GPU pays.

On a GPU at small batch a step costs about one kernel launch per operator that computes
(docs/results/gpu_h200_2026-12-04.md: ~35 µs each on the H200 lent here, so SmolLM2's step
took 560 ms against an 18 ms FLOP model). This counts them on CPU, deterministically, with a
``TorchDispatchMode``: every aten operator of one ``train_step`` (the model's forward and
backward, the losses, the optimizer, ‖g‖² and Ĝ_t), split into

* ``kernels``: operators that compute (on a GPU, a launch each);
* ``views``: views, ``detach`` and allocations (no launch);
* ``reads``: ``_local_scalar_dense``, a read of a value on the host: a synchronisation on a GPU,
  except AdamW's step counters, which torch keeps on the host (most of the count).

``--foreach`` builds AdamW as it is built on CUDA by default (``foreach=True``: a few
multi-tensor operators instead of about 7 per parameter tensor), so the counts are a GPU's.
Rows: each method, with Ĝ_t on and off (``run.unbiased_grad_sq``), and per parameter tensor.
``--probes``: instead, one ZeroLock step with every probe due (cadence 1), each probe's
``before_step`` and ``after_step`` counted apart: what a probed step adds on a GPU::

    python3 benchmarks/step_ops.py --foreach                            # embedded model, K = 4
    python3 benchmarks/step_ops.py --model smollm2-135m --chunks 5 --foreach
    python3 benchmarks/step_ops.py --probes
"""

from __future__ import annotations

import argparse
import collections
import tempfile
from collections.abc import Callable

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from zerolock_theory.config import TrainConfig
from zerolock_theory.training.loop import setup

FREE = {"detach", "empty", "empty_like", "empty_strided", "lift_fresh", "alias", "_unsafe_view"}
"""Operators that never launch a kernel besides views (``OpOverload.is_view``)."""


class OpCounter(TorchDispatchMode):
    """Counts every aten operator dispatched while active, by packet name."""

    def __init__(self) -> None:
        super().__init__()
        self.counts: collections.Counter[str] = collections.Counter()  # computing operators, by name
        self.kinds: collections.Counter[str] = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        kind = ("reads" if name == "_local_scalar_dense" else
                "views" if func.is_view or name in FREE else "kernels")
        self.kinds[kind] += 1
        if kind == "kernels":
            self.counts[name] += 1
        return func(*args, **(kwargs or {}))


def count_step(run, step: int) -> OpCounter:
    """The operators of one ``train_step`` of ``run`` on its next batch."""
    batch = {k: v.to(run.device) for k, v in run.stream.next_batch().items()}
    run.chunked.train()
    with OpCounter() as counter:
        run.step_fn.train_step(batch, step)
    return counter


SCRATCH = tempfile.TemporaryDirectory(prefix="step-ops-")
"""The runs' directories; removed when the benchmark exits."""


def build(model: str, chunks: int, method: str, seq_len: int, batch: int, unbiased: bool):
    """A run of ``method`` (backprop: its own loss only) ready to step."""
    cfg = TrainConfig.from_dict({
        "model": {"path": model, "chunks": chunks, "device": "cpu"},
        "data": {"seq_len": seq_len, "batch_size": batch},
        "method": {"name": method},
        "run": {"steps": 100, "progress": False, "unbiased_grad_sq": unbiased},
    })
    run = setup(cfg, tempfile.mkdtemp(prefix=f"{method}-", dir=SCRATCH.name))
    if method == "backprop":
        run.step_fn.readout_every = 0
    return run


PROBES = {"n_positions": 64, "readouts": {"mode": "topk"}, "stability": {}, "minimizers": {},
          "gradients": {"every": 1}, "scaling": {"every": 1}, "proof": {"every": 1}}
"""Every probe, due at every step (``--probes``)."""


def probe_rows(model: str, chunks: int, seq_len: int, batch: int) -> list[tuple[str, int, int]]:
    """(name, launches, host reads) of the training step and of each probe, at the third step of
    a run with every probe due (the first two build state)."""
    from zerolock_theory.app.workflows.runs import probed_setup
    from zerolock_theory.models import resolve_model_path
    from zerolock_theory.training.loop import quiet_mode

    cfg = TrainConfig.from_dict({
        "model": {"path": str(resolve_model_path(model)), "chunks": chunks, "device": "cpu"},
        "data": {"seq_len": seq_len, "batch_size": batch},
        "method": {"name": "zerolock"},
        "run": {"steps": 10, "progress": False},
        "probes": PROBES,
    })
    run = probed_setup(cfg, tempfile.mkdtemp(prefix="probes-", dir=SCRATCH.name))
    ctx = run.hook_ctx
    with quiet_mode(run.chunked):
        for probe in run.hooks:
            probe.on_start(ctx)
    rows: list[tuple[str, int, int]] = []
    for step in range(3):
        rows = []
        counts = {}
        for probe in run.hooks:
            with quiet_mode(run.chunked), OpCounter() as counter:
                if callable(getattr(probe, "before_step", None)):  # as the loop calls it
                    probe.before_step(ctx, step)
            counts[type(probe).__name__] = counter
        batch_t = {k: v.to(run.device) for k, v in run.stream.next_batch().items()}
        run.chunked.train()
        with OpCounter() as counter:
            metrics = run.step_fn.train_step(batch_t, step)
        rows.append(("training step", counter.kinds["kernels"], counter.kinds["reads"]))
        for probe in run.hooks:
            with quiet_mode(run.chunked), OpCounter() as counter:
                probe.after_step(ctx, step, metrics)
            before = counts[type(probe).__name__]
            rows.append((type(probe).__name__, before.kinds["kernels"] + counter.kinds["kernels"],
                         before.kinds["reads"] + counter.kinds["reads"]))
    for probe in run.hooks:
        probe.on_end(ctx)
    return rows


def foreach_adamw() -> Callable[[], None]:
    """Make AdamW default to ``foreach=True`` (CUDA's default); returns the undo."""
    original = torch.optim.AdamW.__init__

    def init(self, params, *args, **kwargs):
        kwargs.setdefault("foreach", True)
        original(self, params, *args, **kwargs)

    torch.optim.AdamW.__init__ = init
    return lambda: setattr(torch.optim.AdamW, "__init__", original)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", default="embedded", help="embedded, a model directory, a .gguf file or smollm2-135m")
    p.add_argument("--chunks", type=int, default=4)
    p.add_argument("--seq-len", type=int, default=32)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--foreach", action="store_true", help="AdamW with foreach=True, as on CUDA")
    p.add_argument("--top", type=int, default=12, help="the most frequent computing operators to list")
    p.add_argument("--probes", action="store_true", help="each probe's launches in a step where every probe is due")
    args = p.parse_args()
    undo = foreach_adamw() if args.foreach else (lambda: None)
    try:
        if args.probes:
            rows = probe_rows(args.model, args.chunks, args.seq_len, args.batch_size)
            step = rows[0][1]
            print(f"{'part':<16} {'kernels':>8} {'reads':>6} {'x step':>7}")
            for name, kernels, reads in rows:
                print(f"{name:<16} {kernels:>8} {reads:>6} {kernels / step:>7.2f}")
            return
        print(f"{'method':<10} {'G-hat':>6} {'kernels':>8} {'views':>7} {'reads':>6} {'tensors':>8} "
              f"{'kernels/tensor':>15}")
        tops = {}
        for method in ("zerolock", "backprop"):
            for unbiased in (True, False):
                run = build(args.model, args.chunks, method, args.seq_len, args.batch_size, unbiased)
                count_step(run, 0)  # the optimizer's state is created on the first step
                counter = count_step(run, 1)
                tensors = sum(len(ps) for ps in run.step_fn.params)
                kinds = counter.kinds
                print(f"{method:<10} {'on' if unbiased else 'off':>6} {kinds['kernels']:>8} {kinds['views']:>7} "
                      f"{kinds['reads']:>6} {tensors:>8} {kinds['kernels'] / tensors:>15.1f}")
                if unbiased:
                    tops[method] = counter
        for method, counter in tops.items():
            busy = counter.counts.most_common(args.top)
            print(f"\n{method}, G-hat on: " + ", ".join(f"{n} {c}" for n, c in busy))
    finally:
        undo()


if __name__ == "__main__":
    main()
