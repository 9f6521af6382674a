"""Benchmark: step-time overhead of the probes (not a test).

Builds two runs in one process with ``training.loop.setup`` — a plain one and one with the
probes of a recipe (default: ``zerolock_theory/recipes/probes.toml``, every probe at its
default settings) — on the embedded model at the default training settings, and steps
them alternately (which one goes first alternates too), so both see the same machine load.
Per step it times the training step of each run and, for the instrumented run, the probe
hooks exactly as the loop calls them (inside ``quiet_mode``), split into:

* ``readouts (forward)``: the shared p̃ on the probe batch (``probes.batch.readouts``);
* each probe's ``after_step`` on top of that (store encoding, stability terms, …).

Prints the ratios median(step + probes) / median(plain step) and the same for the means
(which count probes that run only every few steps), and the cost of each part::

    python3 benchmarks/probe_overhead.py --steps 40
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import torch

from probes.batch import DEFAULT_N_POSITIONS, readouts
from zerolock_theory.config import TrainConfig, apply_overrides, read_recipe
from zerolock_theory.training.loop import Run, quiet_mode, setup
from zerolock_theory.workflows.runs import probed_setup

RECIPE = Path(__file__).resolve().parents[1] / "zerolock_theory" / "recipes" / "probes.toml"


def parse_args() -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--recipe", type=Path, default=RECIPE, help="recipe with the [probes] table")
    p.add_argument("--steps", type=int, default=40, help="timed steps per run")
    p.add_argument("--warmup", type=int, default=3, help="untimed first steps")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: leave as is)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    return p.parse_args()


def _train_step(run: Run, step: int) -> float:
    batch = {k: v.to(run.device) for k, v in run.stream.next_batch().items()}
    if run.device.type == "cuda":
        torch.cuda.synchronize()
    tic = time.perf_counter()
    run.step_fn.train_step(batch, step)
    if run.device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - tic


def _timed(run: Run, fn, *args) -> float:
    tic = time.perf_counter()
    fn(*args)
    if run.device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - tic


def _probe_hooks(run: Run, step: int, parts: dict[str, list[float]]) -> float:
    """The loop's after_step calls, with the shared readout forward timed on its own."""
    ctx = run.hook_ctx
    total = 0.0
    with quiet_mode(run.chunked):
        n = next((getattr(p, "n_positions", None) for p in run.hooks), DEFAULT_N_POSITIONS)
        seed = next((getattr(p, "seed", None) for p in run.hooks), None)
        t = _timed(run, readouts, ctx, step + 1, n, seed)
        parts["readouts (forward)"].append(t)
        total += t
        for probe in run.hooks:
            t = _timed(run, probe.after_step, ctx, step, {})
            parts[probe.name].append(t)
            total += t
    return total


def main() -> None:
    """Step both runs alternately and print the overhead ratio and its parts."""
    args = parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    raw = apply_overrides(read_recipe(args.recipe), [*args.overrides, "run.progress=false"])
    raw["run"] = {**raw.get("run", {}), "steps": args.warmup + args.steps}
    probed_cfg = TrainConfig.from_dict(raw)
    plain_cfg = TrainConfig.from_dict({**raw, "probes": {}})
    with tempfile.TemporaryDirectory() as tmp:
        plain = setup(plain_cfg, Path(tmp) / "plain")
        probed = probed_setup(probed_cfg, Path(tmp) / "probed")
        with quiet_mode(probed.chunked):
            for probe in probed.hooks:
                probe.on_start(probed.hook_ctx)
        plain.chunked.train()
        probed.chunked.train()
        times: dict[str, list[float]] = defaultdict(list)
        parts: dict[str, list[float]] = defaultdict(list)
        for step in range(args.warmup + args.steps):
            order = (plain, probed) if step % 2 == 0 else (probed, plain)
            for run in order:
                train = _train_step(run, step)
                hooks = _probe_hooks(run, step, parts) if run is probed else 0.0
                if step >= args.warmup:
                    times["plain" if run is plain else "probed"].append(train + hooks)
                    times["probed step" if run is probed else "plain step"].append(train)
        for probe in probed.hooks:
            probe.on_end(probed.hook_ctx)
    skip = args.warmup
    plain_med = statistics.median(times["plain"])
    probed_med = statistics.median(times["probed"])
    cfg = probed_cfg
    print(
        f"device {plain.device}, threads {torch.get_num_threads()}, K={cfg.model.chunks}, "
        f"batch {cfg.data.batch_size}x{cfg.data.seq_len}, {args.steps} timed steps after {skip} warm-up"
    )
    print(f"plain step:            median {plain_med * 1e3:8.1f} ms")
    print(f"instrumented step:     median {statistics.median(times['probed step']) * 1e3:8.1f} ms (training only)")
    print(f"instrumented + probes: median {probed_med * 1e3:8.1f} ms")
    print(f"overhead ratio (median instrumented / median plain): {probed_med / plain_med:.3f}")
    mean_ratio = statistics.fmean(times["probed"]) / statistics.fmean(times["plain"])
    print(f"overhead ratio (mean instrumented / mean plain):     {mean_ratio:.3f}")
    print("per-step cost of the probes (mean over timed steps, share of the plain step):")
    for name, values in sorted(parts.items(), key=lambda kv: -sum(kv[1][skip:])):
        mean = statistics.fmean(values[skip:])
        print(f"  {name:20s} {mean * 1e3:8.2f} ms  {mean / plain_med:6.1%}")


if __name__ == "__main__":
    main()
