"""Benchmark (not a test): the cost of the ``scaling`` probe per scaled step, and of its
random-direction baseline.

Two runs of the embedded model (or ``--model``) with the scaling probe due at every step,
one with ``random_baseline`` and one without, stepped alternately so both see the same
machine load. Per step it times (process CPU time by default) the training step and the
probe's ``before_step`` + ``after_step`` as the loop calls them (inside ``quiet_mode``).
Prints the medians in ms: the training step, the probe without the baseline, with it, the
baseline alone (the difference), and the baseline as a multiple of the training step; then,
counted on one more step (``step_ops.OpCounter``), the operators that launch a kernel in the
training step and in the probe with its baseline (on a GPU at small batch, a launch each)::

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
        "model": {"path": args.model, "chunks": args.chunks, "device": args.device, "autocast": args.autocast},
        "data": {"seq_len": args.seq_len, "batch_size": args.batch_size},
        "optim": {"name": "sgd", "lr": 0.1, "schedule": "inv_sqrt"},
        "run": {"steps": args.warmup + args.steps + 1, "progress": False},
        "probes": {"scaling": {"every": 1, "n_positions": args.positions, "random_baseline": baseline}},
    })


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="embedded")
    parser.add_argument("--chunks", type=int, default=4)
    parser.add_argument("--device", default="auto", help="auto (cuda when present), cpu, cuda, ...")
    parser.add_argument("--autocast", default=None, help="autocast dtype on a GPU (bfloat16); default none")
    parser.add_argument("--seq-len", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--positions", type=int, default=64, help="probe batch positions (the suite's 64)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    return parser


def _launches(run, step: int) -> tuple[int, int]:
    """Operators that launch a kernel (``step_ops.OpCounter``) in one training step and in the
    probe's ``before_step`` + ``after_step`` at a scaled step."""
    from step_ops import OpCounter

    (probe,) = run.hooks
    batch = {k: v.to(run.device) for k, v in run.stream.next_batch().items()}
    with OpCounter() as hooks:
        with quiet_mode(run.chunked):
            probe.before_step(run.hook_ctx, step)
    with OpCounter() as train:
        run.step_fn.train_step(batch, step)
    with OpCounter() as after:
        with quiet_mode(run.chunked):
            probe.after_step(run.hook_ctx, step, {})
    return train.kinds["kernels"], hooks.kinds["kernels"] + after.kinds["kernels"]


def measure(args: argparse.Namespace) -> dict[str, float]:
    """Medians in ms of the training step and the probe with and without its baseline (keys
    ``train``, ``probe``, ``probe + baseline``), and the kernel launches of one scaled step
    with the baseline (``launches train``, ``launches probe + baseline``), counted on a last
    step after the timed ones."""
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
        train_launches, probe_launches = _launches(runs["probe + baseline"], args.warmup + args.steps)
    med = {k: 1e3 * statistics.median(v) for k, v in times.items()}
    return {**med, "launches train": train_launches, "launches probe + baseline": probe_launches}


def main() -> None:
    args = parser().parse_args()
    med = measure(args)
    extra = med["probe + baseline"] - med["probe"]
    print(f"{args.model}, K={args.chunks}, probe batch {args.positions} positions, {args.steps} scaled steps, "
          f"{args.clock} time, medians in ms")
    print(f"training step                 {med['train']:9.1f}")
    print(f"scaling probe, no baseline    {med['probe']:9.1f}")
    print(f"scaling probe with baseline   {med['probe + baseline']:9.1f}")
    print(f"random baseline alone         {extra:9.1f}  ({extra / med['train']:.2f} training steps)")
    print(f"kernel launches: training step {med['launches train']:.0f}, "
          f"scaling probe with baseline {med['launches probe + baseline']:.0f}")


if __name__ == "__main__":
    main()
