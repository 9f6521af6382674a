"""Benchmark (not a test): Ĝ_t's noise from the training step and from the ``gradient_batch`` probe, and the cost.

One run of the recipe ``theorem_sgd`` (embedded model, K = 4, ZeroLock forward α = 0.5, SGD
η_t = η_0/√(t+1), η_0 = 0.1) at batch 8 × 32, one seed, stepped as the loop steps it
(``training.loop.setup``; the probes' hooks inside ``quiet_mode``), with the probe
``gradient_batch`` at ``--multiple`` m and ``--every`` k, twice: a second instance with another
seed draws an independent batch at the same ω^t. Prints

* per series (the step's ``train/grad_sq_unbiased`` and the probe's value, both at ω^t, T = t + 1):
  its points, ``analyses.theorem1.rate.noise_ratio`` and the same with the degrees of freedom of its
  sub-block means counted (× √((N − 1)/(N − J)), N points in J non-empty sub-blocks: a series
  sampled every k steps has sub-blocks of one or two points, which the plain ratio counts as
  noise-free), and the *per-step noise*: that of an every-step series whose block means have
  the same standard error (the corrected ratio × √k; the rule averages Ĝ over each block);
* the probe's noise split in two: the sampling part (the spread of one draw about another at
  the same ω^t) and the rest, the variation of ‖∇R(ω^t)‖² itself along the trajectory, which no
  batch size removes (and the step's noise split with that same level part);
* the probe's cost: (step + probe) / step in process CPU time (the first probe's hooks with their
  eval-mode switch, beside the training steps of the same run);
* the rule's power (``analyses.theorem1.rate_power.rate_power``, 5 seeds, T = 1000) at these noises, and at
  the suite's measured noise (``--suite-noise``) as it is and scaled by the probe's reduction
  (probe per-step noise / step noise).

    OMP_NUM_THREADS=1 nice -n 5 python3 benchmarks/gradient_batch_noise.py --steps 400
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from analyses.theorem1.rate import BLOCKS, WINDOW, block_edges, noise_ratio
from analyses.theorem1.rate_power import POWER_FAMILIES, rate_power
from probes.gradient_batch import GradientBatchProbe
from zerolock_theory.config import TrainConfig, read_recipe
from zerolock_theory.config_overrides import apply_overrides
from zerolock_theory.records import GRAD_SQ_UNBIASED, GRADIENT_BATCH
from zerolock_theory.training.loop import Run, quiet_mode, setup

STEP_KEY = GRAD_SQ_UNBIASED
PROBE_KEY = GRADIENT_BATCH.key(None, "grad_sq_unbiased")
DRAWS = (PROBE_KEY, f"{PROBE_KEY}:second draw")
SECOND_DRAW = 1000  # the second probe's seed offset: an independent draw at the same ω^t


def parse_args() -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--multiple", type=int, default=8, help="probe batch / training batch (m)")
    p.add_argument("--every", type=int, default=8, help="probe cadence in steps (k)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--seeds", type=int, default=5, help="seeds of the power design")
    p.add_argument("--horizon", type=int, default=1000, help="horizon of the power design")
    p.add_argument("--reps", type=int, default=200, help="repetitions per family of the power design")
    p.add_argument("--suite-noise", type=float, nargs="*", default=[2.4, 1.2],
                   help="the suite's measured noise (docs/THEOREM1.md), scaled by the probe's reduction")
    args = p.parse_args()
    if args.steps < 100 or args.multiple < 1 or args.every < 1:
        p.error(f"need --steps >= 100, --multiple >= 1, --every >= 1, got {args.steps}, {args.multiple}, {args.every}")
    return args


def corrected_noise(t: np.ndarray, g: np.ndarray) -> float:
    """``noise_ratio`` with the sub-block means' degrees of freedom counted: × √((N − 1)/(N − J))."""
    edges = block_edges(int(t[-1]), WINDOW, blocks=4 * BLOCKS)
    which = np.searchsorted(edges, t, side="left") - 1
    inside = which[(which >= 0) & (which < edges.size - 1)]
    points, blocks = inside.size, np.unique(inside).size
    return noise_ratio(t, g) * math.sqrt((points - 1) / (points - blocks))


def _hooks(r: Run, probes: list[GradientBatchProbe], seconds: list[float], call: str, *rest) -> dict[str, float]:
    """One hook call on each probe, timed (with the eval-mode switch); the values each logged."""
    logged = {}
    for i, (probe, key) in enumerate(zip(probes, DRAWS, strict=True)):
        tic = time.process_time()
        with quiet_mode(r.chunked):
            value = getattr(probe, call)(r.hook_ctx, *rest)
        seconds[i] += time.process_time() - tic
        if value and PROBE_KEY in value:
            logged[key] = value[PROBE_KEY]
    return logged


def run(args: argparse.Namespace) -> tuple[dict[str, tuple[np.ndarray, np.ndarray]], float, list[float]]:
    """The series (T, Ĝ) of the step and of each draw, and the CPU seconds of the steps and of each probe."""
    raw = apply_overrides(read_recipe("theorem_sgd"), [
        "data.seq_len=32", "data.batch_size=8", "data.eval_batches=1", f"run.steps={args.steps}",
        f"run.seed={args.seed}", "run.progress=false"])
    probes = [GradientBatchProbe(every=args.every, multiple=args.multiple, seed=seed)
              for seed in (args.seed, args.seed + SECOND_DRAW)]
    series: dict[str, list[tuple[int, float]]] = {key: [] for key in (STEP_KEY, *DRAWS)}
    step_s, probe_s = 0.0, [0.0, 0.0]
    with tempfile.TemporaryDirectory() as tmp:
        r = setup(TrainConfig.from_dict(raw), Path(tmp) / "run", hooks=probes)
        _hooks(r, probes, probe_s, "on_start")
        r.chunked.train()
        for step in range(args.steps):
            batch = {k: v.to(r.device) for k, v in r.stream.next_batch().items()}
            tic = time.process_time()
            metrics = r.step_fn.train_step(batch, step)
            step_s += time.process_time() - tic
            series[STEP_KEY].append((step + 1, metrics[STEP_KEY]))
            for key, value in _hooks(r, probes, probe_s, "after_step", step, metrics).items():
                series[key].append((step + 1, value))
    out = {key: (np.array([t for t, _ in pts], float), np.array([g for _, g in pts], float))
           for key, pts in series.items()}
    return out, step_s, probe_s


def sampling_noise(t: np.ndarray, a: np.ndarray, b: np.ndarray) -> float:
    """The spread of one draw about Ĝ at the same ω^t, from two independent draws: √(mean (a − b)²/2) over
    the window, over a's mean level (``noise_ratio``'s convention)."""
    inside = t > (1.0 - WINDOW) * t[-1]
    return math.sqrt(np.mean((a[inside] - b[inside]) ** 2) / 2.0) / a.mean()


def power_cell(noise: float, args: argparse.Namespace) -> str:
    """The share of 1/√T and of the bound decided correctly at ``noise``."""
    p = rate_power(noise, args.seeds, args.horizon, args.reps)
    return " / ".join(f"{p.correct[f]:.2f}" for f in POWER_FAMILIES)


def main() -> None:
    args = parse_args()
    torch.manual_seed(args.seed)
    series, step_s, probe_s = run(args)
    k, m = args.every, args.multiple
    print(f"theorem_sgd, embedded model, K = 4, batch 8 x 32, seed {args.seed}, {args.steps} steps; "
          f"probe m = {m}, k = {k}\n")
    print("| series | points | noise_ratio | with sub-block dof | per-step noise |\n|---|---|---|---|---|")
    noise = {}
    for key, cadence in ((STEP_KEY, 1), (DRAWS[0], k)):
        t, g = series[key]
        noise[key] = corrected_noise(t, g)
        print(f"| `{key.split(':')[0]}` | {t.size} | {noise_ratio(t, g):.2f} | {noise[key]:.2f} | "
              f"{noise[key] * math.sqrt(cadence):.2f} |")
    t, a = series[DRAWS[0]]
    sampling = sampling_noise(t, a, series[DRAWS[1]][1])
    level = math.sqrt(max(noise[DRAWS[0]] ** 2 - sampling ** 2, 0.0))
    step_sampling = math.sqrt(max(noise[STEP_KEY] ** 2 - level ** 2, 0.0))
    print(f"\nthe probe's noise per point, from a second draw at each ω^t (seed {args.seed + SECOND_DRAW}): "
          f"sampling {sampling:.2f}, the level ‖∇R(ω^t)‖² itself {level:.2f}; so the step's {noise[STEP_KEY]:.2f} is "
          f"sampling {step_sampling:.2f} and level {level:.2f}; the level's part is a floor for any batch size")
    per_step = noise[DRAWS[0]] * math.sqrt(k)
    print(f"cost: (step + probe) / step = {(step_s + probe_s[0]) / step_s:.2f} in CPU time "
          f"(step {1e3 * step_s / args.steps:.1f} ms, probe {1e3 * probe_s[0] / args.steps:.1f} ms per step; "
          f"m/k = {m / k:.2f} training gradients per step)\n")
    ratio = per_step / noise[STEP_KEY]
    print(f"power: {args.seeds} seeds, T = {args.horizon}, {args.reps} repetitions; "
          f"shares of {' / '.join(POWER_FAMILIES)} decided correctly\n")
    print("| Ĝ_t from | noise | power |\n|---|---|---|")
    rows = [("the step (this run)", noise[STEP_KEY]), (f"the probe, m = {m}, k = {k} (this run)", per_step),
            (f"the probe, m = {m}, k = 1 (its noise per point; cost {m} gradients per step)", noise[DRAWS[0]]),
            ("any batch, every step (the level's part alone: the floor)", level)]
    rows += [(label, x) for s in args.suite_noise
             for label, x in ((f"the suite's {s:g}", s), (f"the suite's {s:g} x {ratio:.2f} (the probe)", s * ratio))]
    for label, x in rows:
        print(f"| {label} | {x:.2f} | {power_cell(x, args)} |")


if __name__ == "__main__":
    main()
