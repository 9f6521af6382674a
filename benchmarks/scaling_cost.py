"""Benchmark (not a test): the cost of the ``scaling`` probe per scaled step, and of its
random-direction baseline.

Two runs of the embedded model (or ``--model``) with the scaling probe due at every step,
one with ``random_baseline`` and one without, stepped alternately so both see the same
machine load. Per step it times (process CPU time by default) the training step and the
probe's ``before_step`` + ``after_step`` as the loop calls them (inside ``quiet_mode``).
Prints the medians in ms: the training step, the probe without the baseline, with it, the
baseline alone (the difference), and the baseline as a multiple of the training step::

    python3 benchmarks/scaling_cost.py --steps 20
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import torch

from zerolock_theory.app.workflows.runs import probed_setup
from zerolock_theory.config import TrainConfig
from zerolock_theory.models import resolve_device
from zerolock_theory.training.loop import quiet_mode


def _config(args: argparse.Namespace, baseline: bool) -> TrainConfig:
    return TrainConfig.from_dict({
        "model": {"path": args.model, "chunks": args.chunks, "device": args.device},
        "data": {"seq_len": args.seq_len, "batch_size": args.batch_size},
        "optim": {"name": "sgd", "lr": 0.1, "schedule": "inv_sqrt"},
        "run": {"steps": args.warmup + args.steps, "progress": False},
        "probes": {"scaling": {"every": 1, "n_positions": args.positions, "random_baseline": baseline}},
    })


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="embedded")
    parser.add_argument("--chunks", type=int, default=4)
    parser.add_argument("--device", default="auto", help="auto (cuda when present), cpu, cuda, ...")
    parser.add_argument("--seq-len", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--positions", type=int, default=64, help="probe batch positions (the suite's 64)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    on_cuda = resolve_device(args.device).type == "cuda"
    sync = torch.cuda.synchronize if on_cuda else (lambda: None)
    times: dict[str, list[float]] = {"train": [], "probe": [], "probe + baseline": []}
    with tempfile.TemporaryDirectory() as tmp:
        runs = {name: probed_setup(_config(args, name == "probe + baseline"), Path(tmp) / name.replace(" ", ""))
                for name in ("probe", "probe + baseline")}
        for run in runs.values():
            with quiet_mode(run.chunked):
                for probe in run.hooks:
                    probe.on_start(run.hook_ctx)
            run.chunked.train()
        for step in range(args.warmup + args.steps):
            for name in (("probe", "probe + baseline") if step % 2 == 0 else ("probe + baseline", "probe")):
                run = runs[name]
                (probe,) = run.hooks
                batch = {k: v.to(run.device) for k, v in run.stream.next_batch().items()}
                tic = clock()
                with quiet_mode(run.chunked):
                    probe.before_step(run.hook_ctx, step)
                sync()
                hooks = clock() - tic
                tic = clock()
                run.step_fn.train_step(batch, step)
                sync()
                train = clock() - tic
                tic = clock()
                with quiet_mode(run.chunked):
                    probe.after_step(run.hook_ctx, step, {})
                sync()
                hooks += clock() - tic
                if step >= args.warmup:
                    times[name].append(hooks)
                    times["train"].append(train)
    med = {k: 1e3 * statistics.median(v) for k, v in times.items()}
    extra = med["probe + baseline"] - med["probe"]
    print(f"{args.model}, K={args.chunks}, probe batch {args.positions} positions, {args.steps} scaled steps, "
          f"{args.clock} time, medians in ms")
    print(f"training step                 {med['train']:9.1f}")
    print(f"scaling probe, no baseline    {med['probe']:9.1f}")
    print(f"scaling probe with baseline   {med['probe + baseline']:9.1f}")
    print(f"random baseline alone         {extra:9.1f}  ({extra / med['train']:.2f} training steps)")


if __name__ == "__main__":
    main()
