"""Benchmark: per-step CPU cost of the ``proof`` probe and of the global Ĝ_t (not a test).

On the embedded model at the FULL suite's training settings (K = 4, SGD with η_0/√(t+1),
batch 8 × 32, one thread), per step: the plain ZeroLock training step, the probes'
``after_step`` exactly as the loop calls it (inside ``quiet_mode``), and
``training.steps.global_grad_sq_unbiased`` on the same minibatch (``run.global_grad_every``).
Times are process CPU time; the first two steps are not counted. Example::

    python3 benchmarks/proof_overhead.py --steps 20 --positions 64 --every 1 --smoothness-every 0
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import torch

from probes.registry import build_probes
from zerolock_theory.config import TrainConfig
from zerolock_theory.training.loop import quiet_mode, setup
from zerolock_theory.training.steps import global_grad_sq_unbiased


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=20, help="steps per run (the first two are not counted)")
    p.add_argument("--positions", type=int, default=64, help="probe batch positions N")
    p.add_argument("--every", type=int, default=1, help="proof.every")
    p.add_argument("--smoothness-every", type=int, default=0, help="proof.smoothness_every")
    p.add_argument("--direction", choices=("forward", "reverse"), default="forward")
    return p.parse_args()


def main() -> None:
    args = parse_args()
    torch.set_num_threads(1)
    eps = 0.1 if args.direction == "reverse" else 0.0
    config = TrainConfig.from_dict({
        "model": {"path": "embedded", "chunks": 4, "device": "cpu"},
        "data": {"seq_len": 32, "batch_size": 8},
        "method": {"alpha": 0.5, "direction": args.direction, "epsilon": eps},
        "optim": {"name": "sgd", "lr": 0.05, "schedule": "inv_sqrt"},
        "run": {"steps": 1000, "eval_every": 1000, "checkpoint_every": 1000, "progress": False, "threads": 1},
        "probes": {"n_positions": args.positions,
                   "proof": {"every": args.every, "smoothness_every": args.smoothness_every}},
    })
    scratch = tempfile.TemporaryDirectory(prefix="proof-overhead-")  # removed at exit
    run = setup(config, scratch.name, hooks=build_probes(config.probes, config.probe_settings))
    with quiet_mode(run.chunked):
        for hook in run.hooks:
            hook.on_start(run.hook_ctx)
    run.chunked.train()
    clock, plain, probe, glob = time.process_time, [], [], []
    for step in range(args.steps):
        batch = run.stream.next_batch()
        tic = clock()
        global_grad_sq_unbiased(run.step_fn, batch)
        glob.append(clock() - tic)
        tic = clock()
        metrics = run.step_fn.train_step(batch, step)
        plain.append(clock() - tic)
        tic = clock()
        with quiet_mode(run.chunked):
            for hook in run.hooks:
                hook.after_step(run.hook_ctx, step, metrics)
        probe.append(clock() - tic)

    def ms(xs: list[float]) -> tuple[float, float]:
        return 1000 * statistics.median(xs[2:]), 1000 * statistics.mean(xs[2:])

    (p_med, _), (q_med, q_mean), (g_med, _) = ms(plain), ms(probe), ms(glob)
    print(f"{args.direction} N={args.positions} every={args.every} smoothness_every={args.smoothness_every}: "
          f"plain step {p_med:.1f} ms; proof probe {q_med:.1f} ms median, {q_mean:.1f} ms mean "
          f"({q_mean / p_med:.2f}x); global G-hat {g_med:.1f} ms ({g_med / p_med:.2f}x)")


if __name__ == "__main__":
    main()
