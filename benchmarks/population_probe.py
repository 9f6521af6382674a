"""Benchmark (not a test): the step-scaling probe's time per probed step, today's loop against batched.

``ScalingProbe`` runs one forward of the probe batch per (factor, direction) point;
``BatchedScalingProbe`` runs all points as members of a population in one forward per chunk.
On the embedded model at the full suite's K, batch and probe positions (``verify_full.toml``),
default factors (7) with the random and antithetic directions (20 forwards a probed step), it
prints the median ``after_step`` time of each over ``--repeats`` probed steps (timed alternately on
the same run, after the same update) and their ratio.

    python3 benchmarks/population_probe.py --threads 1 --repeats 5
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

import torch
from population import suite_sizes

from probes.scaling import ScalingProbe
from probes.scaling_batched import BatchedScalingProbe
from zerolock_theory.config import TrainConfig
from zerolock_theory.training.loop import quiet_mode, setup


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--positions", type=int, default=64, help="probe positions N (the suite's probe_positions)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    chunks, rows, length = suite_sizes()
    config = TrainConfig.from_dict({
        "model": {"path": "embedded", "chunks": chunks, "device": "cpu"},
        "data": {"seq_len": length, "batch_size": rows},
        "run": {"steps": 1000, "progress": False},
    })
    with tempfile.TemporaryDirectory(prefix="population-probe-") as out:
        run = setup(config, out)
        ctx = run.hook_ctx
        probes = {"loop": ScalingProbe(every=1, n_positions=args.positions),
                  "batched": BatchedScalingProbe(every=1, n_positions=args.positions)}
        times: dict[str, list[float]] = {name: [] for name in probes}
        for step in range(args.repeats + 1):
            batch = run.stream.next_batch()
            with quiet_mode(run.chunked):
                for probe in probes.values():
                    probe.before_step(ctx, step)
            run.chunked.train()
            run.step_fn.train_step(batch, step)
            with quiet_mode(run.chunked):
                for name, probe in probes.items():
                    tic = time.perf_counter()
                    probe.after_step(ctx, step, {})
                    if step:  # the first probed step builds the population: not timed
                        times[name].append(time.perf_counter() - tic)
    loop, batched = (statistics.median(times[name]) for name in probes)
    points = len(probes["loop"].factors) * len(probes["loop"].directions) - 1
    print(f"embedded model, K = {chunks}, N = {args.positions} probe positions, {points} scaled points a step, "
          f"{args.threads} thread(s), median of {args.repeats} probed steps")
    print(f"loop {1e3 * loop:.0f} ms   batched {1e3 * batched:.0f} ms   ratio {loop / batched:.2f}")


if __name__ == "__main__":
    main()
