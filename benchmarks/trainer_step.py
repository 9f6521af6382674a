"""Benchmark (not a test): ZeroLock vs backprop step time against a FLOP model, and saved activations.

Prints, on the embedded model (or ``--model``: a directory, a .gguf file, smollm2-135m), for
each K in ``--chunks``:

* each method's step time (median over interleaved repetitions; backprop computes only its own
  loss: ``BackpropStep.readout_every = 0``) beside its FLOP model (``step_flops.py``): the
  layers forward and backward, each readout, the loss over V, the machine's measured matmul
  rates, and the ZeroLock ÷ backprop step-time ratio measured beside the modelled one;
* peak saved-for-backward activation bytes per step, ZeroLock ÷ backprop
  (``SavedTensorMeter``: ``torch.autograd.graph.saved_tensors_hooks``, parameters excluded,
  shared storage counted once; ZeroLock frees chunk k's graph before chunk k+1 runs, backprop
  holds all chunks' graphs until its backward);
* the same ratio with readout slicing (``model.readout_chunk_size = --slice``, default 8
  positions): the readout logits are then computed slice by slice into a leaf copy of h_k,
  so ZeroLock keeps at most one slice of logits; "sliced / plain bp" divides by the
  backprop run without slicing, "sliced / sliced bp" by backprop with the same slicing;
* the loss over V per call (the fused loss as trained and the autograd reference, each
  against its floor: ``step_flops.py``);
* with ``--before REV``: the ZeroLock step with ``zerolock_theory/training/losses.py`` as it is
  at git revision REV (loaded beside this tree's, its ``sliced_backward_totals`` in place of
  this tree's; every other module is this tree's), timed in the same loop, interleaved, so both
  share the machine's load.

    python3 benchmarks/trainer_step.py --chunks 2 4 --repeats 20
    python3 benchmarks/trainer_step.py --model smollm2-135m --chunks 2 5 --seq-len 32 --batch-size 8
    python3 benchmarks/trainer_step.py --model smollm2-135m --chunks 5 --seq-len 32 --batch-size 8 \
        --repeats 5 --before 0f07284
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import step_flops
import torch
from step_flops import flop_table, step_model

from zerolock_theory.config import TrainConfig
from zerolock_theory.pipeline.memory import SavedTensorMeter
from zerolock_theory.training import steps
from zerolock_theory.training.loop import setup

CLOCK = [time.perf_counter]  # --clock cpu: time.process_time (robust to other load on a shared CPU)


SCRATCH = tempfile.TemporaryDirectory(prefix="trainer-step-")
"""The runs' directories; removed when the benchmark exits."""


def _runs(model: str, chunks: int, seq_len: int, batch: int, device: str, slice_size: int | None = None) -> dict:
    runs = {}
    for method in ("zerolock", "backprop"):
        cfg = TrainConfig.from_dict({
            "model": {"path": model, "chunks": chunks, "device": device, "readout_chunk_size": slice_size},
            "data": {"seq_len": seq_len, "batch_size": batch},
            "method": {"name": method},
            "run": {"steps": 10_000, "progress": False},
        })
        runs[method] = setup(cfg, tempfile.mkdtemp(prefix=f"{method}-", dir=SCRATCH.name))
    runs["backprop"].step_fn.readout_every = 0  # plain backprop: its own loss only
    return runs


def _losses_at(rev: str) -> types.ModuleType:
    """``zerolock_theory/training/losses.py`` at git revision ``rev``, as a module of its own."""
    path = "zerolock_theory/training/losses.py"
    source = subprocess.run(["git", "show", f"{rev}:{path}"], cwd=Path(__file__).resolve().parents[1],
                            capture_output=True, text=True, check=True).stdout
    module = types.ModuleType(f"losses_at_{rev}")
    sys.modules[module.__name__] = module  # dataclasses look their module up
    exec(compile(source, f"{rev}:{path}", "exec"), module.__dict__)
    return module


@contextlib.contextmanager
def _losses(module: types.ModuleType | None):
    """ZeroLock's step with ``module``'s ``sliced_backward_totals`` (None: today's)."""
    kept = steps.sliced_backward_totals
    if module is not None:
        steps.sliced_backward_totals = module.sliced_backward_totals
    try:
        yield
    finally:
        steps.sliced_backward_totals = kept


def _one_step(run, step: int) -> tuple[float, int]:
    batch = {k: v.to(run.device) for k, v in run.stream.next_batch().items()}
    run.chunked.train()
    with SavedTensorMeter.for_module(run.chunked.model) as meter:
        tic = CLOCK[0]()
        run.step_fn.train_step(batch, step)
        if run.device.type == "cuda":
            torch.cuda.synchronize()
        elapsed = CLOCK[0]() - tic
    return elapsed, meter.peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="embedded",
                        help="model.path: embedded, a model directory, a .gguf file or smollm2-135m")
    parser.add_argument("--chunks", type=int, nargs="+", default=[2, 4])
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--device", default="auto", help="auto (cuda when present), cpu, cuda, ...")
    parser.add_argument("--threads", type=int, default=1, help="torch intra-op threads (CPU)")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="cpu: this process's CPU time (CPU runs on a loaded machine)")
    parser.add_argument("--slice", type=int, default=8, help="readout_chunk_size of the sliced runs (positions)")
    parser.add_argument("--before", metavar="REV", help="also time ZeroLock's step with the losses at git REV")
    args = parser.parse_args()
    before = _losses_at(args.before) if args.before else None
    torch.set_num_threads(args.threads)
    if args.clock == "cpu":
        CLOCK[0] = step_flops.CLOCK[0] = time.process_time
    sliced, measured = {}, {}
    for chunks in args.chunks:
        runs = _runs(args.model, chunks, args.seq_len, args.batch_size, args.device, args.slice)
        sliced[chunks] = {m: max(_one_step(run, i)[1] for i in range(2)) for m, run in runs.items()}
    print(f"{'K':>3} {'zl step s':>10} {'bp step s':>10} {'time ratio':>10} "
          f"{'zl peak MiB':>12} {'bp peak MiB':>12} {'mem ratio':>10} {'zl sliced MiB':>14} "
          f"{'sliced/plain bp':>16} {'sliced/sliced bp':>17}")
    compared = {}
    for chunks in args.chunks:
        runs = _runs(args.model, chunks, args.seq_len, args.batch_size, args.device)
        names = [*runs, *(["before"] if before else [])]  # before: the zerolock run with the old losses
        times = {m: [] for m in names}
        peaks = {m: 0 for m in names}
        for i in range(args.warmup + args.repeats):
            order = names if i % 2 == 0 else list(reversed(names))
            for method in order:
                with _losses(before if method == "before" else None):
                    elapsed, peak = _one_step(runs["zerolock" if method == "before" else method], i)
                if i >= args.warmup:
                    times[method].append(elapsed)
                    peaks[method] = max(peaks[method], peak)
        zl, bp = statistics.median(times["zerolock"]), statistics.median(times["backprop"])
        measured[chunks] = (runs, zl, bp)
        if before:
            compared[chunks] = (statistics.median(times["before"]), zl, peaks["before"], peaks["zerolock"])
        print(f"{chunks:>3} {zl:>10.4f} {bp:>10.4f} {zl / bp:>10.3f} "
              f"{peaks['zerolock'] / 2**20:>12.2f} {peaks['backprop'] / 2**20:>12.2f} "
              f"{peaks['zerolock'] / peaks['backprop']:>10.3f} {sliced[chunks]['zerolock'] / 2**20:>14.2f} "
              f"{sliced[chunks]['zerolock'] / peaks['backprop']:>16.3f} "
              f"{sliced[chunks]['zerolock'] / sliced[chunks]['backprop']:>17.3f}")
    if compared:
        print(f"\nZeroLock step, losses at {args.before} (before) and today's (after), interleaved, median of "
              f"{args.repeats}:")
        print(f"{'K':>3} {'before s':>9} {'after s':>9} {'before / after':>15} {'before MiB':>11} {'after MiB':>10}")
        for chunks, (old, new, old_peak, new_peak) in compared.items():
            print(f"{chunks:>3} {old:>9.4f} {new:>9.4f} {old / new:>15.3f} {old_peak / 2**20:>11.2f} "
                  f"{new_peak / 2**20:>10.2f}")
    for chunks, (runs, zl, bp) in measured.items():
        model = step_model(runs["zerolock"], runs["backprop"], args.batch_size, args.seq_len)
        print("\n" + flop_table(model, {"zerolock": zl, "backprop": bp}, chunks))


if __name__ == "__main__":
    main()
