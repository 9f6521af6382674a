"""Benchmark (not a test): seed-steps per second of a population of adapters against separate runs.

S runs of one group differ only in their adapters, so a population (``training.population``)
steps them in one forward of S·b rows per chunk. This prints, on the embedded model (K = 4,
the full suite's batch and sequence length, ``recipes/verify_full.toml``), for each S and
thread count: the step time of one separate run (S separate runs take S times as long: they
would run one after the other on these cores), the population's step time, the seed-steps per
second of each and their ratio. The two are timed interleaved, repetition by repetition, so
they share the machine's load; the median of ``--repeats`` steps after ``--warmup``.

    python3 benchmarks/population.py                       # S = 1 4 10 20, 1 and 2 threads
    python3 benchmarks/population.py --sizes 10 20 --threads 1 --method backprop
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib
from pathlib import Path

import torch
from torch.utils.flop_counter import FlopCounterMode

from zerolock_theory.config import LoraSettings, MethodConfig, ModelConfig, OptimConfig
from zerolock_theory.models import ChunkedLM, attach_adapters, load_model, trainable_state_dict
from zerolock_theory.models.population import stack_adapters
from zerolock_theory.training.population import build_population_step
from zerolock_theory.training.steps import build_step

RECIPE = Path(__file__).resolve().parents[1] / "zerolock_theory" / "recipes" / "verify_full.toml"
METHODS = {
    "zerolock-forward": MethodConfig(direction="forward", alpha=0.5),
    "zerolock-reverse": MethodConfig(direction="reverse", alpha=0.5, epsilon=0.1),
    "backprop": MethodConfig(name="backprop"),
}


def suite_sizes() -> tuple[int, int, int]:
    """(chunks, batch_size, seq_len) of the full suite."""
    suite = tomllib.loads(RECIPE.read_text())["suite"]
    return suite["chunks"], suite["batch_size"], suite["seq_len"]


def _batch(g: torch.Generator, vocab: int, rows: int, length: int) -> dict[str, torch.Tensor]:
    ids = torch.randint(3, vocab, (rows, length), generator=g)
    return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": torch.roll(ids, -1, 1)}


def _steps(model, method: MethodConfig, chunks: int, size: int, total: int):
    """A separate run's step and a population of ``size`` members' step, on copies of ``model``."""
    settings, optim, model_cfg = LoraSettings(), OptimConfig(), ModelConfig(chunks=chunks)
    single = ChunkedLM(copy.deepcopy(model), chunks)
    attach_adapters(single, settings, 0)
    single_step = build_step(single, method, optim, model_cfg, total, readout_every=0)
    pop = ChunkedLM(copy.deepcopy(model), chunks)
    attach_adapters(pop, settings, 0)
    states = []
    for s in range(size):
        torch.manual_seed(s)
        scratch = ChunkedLM(copy.deepcopy(model), chunks)
        attach_adapters(scratch, settings, s)
        states.append(trainable_state_dict(scratch.model))
    population = stack_adapters(pop, states)
    pop_step = build_population_step(population, method, optim, model_cfg, total, readout_every=0)
    single.train()
    pop.train()
    return single_step, pop_step


def measure(model, method: MethodConfig, size: int, threads: int, repeats: int, warmup: int) -> dict[str, float]:
    """Median step times (s) of one separate run and of the population, interleaved."""
    torch.set_num_threads(threads)
    chunks, rows, length = suite_sizes()
    vocab = model.config.vocab_size
    single_step, pop_step = _steps(model, method, chunks, size, warmup + repeats + 1)
    g = torch.Generator().manual_seed(0)
    with FlopCounterMode(display=False) as counter:  # matmuls and attention of one seed-step
        single_step.train_step(_batch(g, vocab, rows, length), 0)
    single_times, pop_times = [], []
    for t in range(warmup + repeats):
        batches = [_batch(g, vocab, rows, length) for _ in range(size)]
        tic = time.perf_counter()
        single_step.train_step(batches[0], t + 1)
        mid = time.perf_counter()
        pop_step.train_step(batches, t + 1)
        end = time.perf_counter()
        if t >= warmup:
            single_times.append(mid - tic)
            pop_times.append(end - mid)
    return {"single": statistics.median(single_times), "population": statistics.median(pop_times),
            "flops": float(counter.get_total_flops())}


def gemm_rate(rows: int, width: int, vocab: int, threads: int) -> float:
    """FLOP/s of the readout's GEMM [rows, d]·[d, V] (the largest matmul of a step), median of 10."""
    torch.set_num_threads(threads)
    x, w = torch.randn(rows, width), torch.randn(vocab, width)
    out = torch.empty(rows, vocab)
    times = []
    for _ in range(11):
        tic = time.perf_counter()
        torch.mm(x, w.t(), out=out)
        times.append(time.perf_counter() - tic)
    return 2 * rows * width * vocab / statistics.median(times[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 10, 20], help="population sizes S")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2], help="torch intra-op threads")
    parser.add_argument("--method", choices=sorted(METHODS), default="zerolock-forward")
    parser.add_argument("--repeats", type=int, default=10, help="timed steps per setting")
    parser.add_argument("--warmup", type=int, default=2, help="untimed steps first")
    args = parser.parse_args()
    model, _ = load_model("embedded", "float32", "cpu")
    chunks, rows, length = suite_sizes()
    print(f"embedded model, K = {chunks}, batch {rows} x {length} tokens, {args.method}, "
          f"median of {args.repeats} steps (after {args.warmup})")
    print("GFLOP/s: matmul and attention FLOPs of a seed-step (FlopCounterMode) per second; 'gemm' is the rate "
          "of the readout's [b·T, d]·[d, V] GEMM alone at that thread count (a compute-bound step's ceiling)")
    print(f"{'threads':>7} {'S':>4} {'run step ms':>12} {'pop step ms':>12} {'runs seed-steps/s':>18} "
          f"{'pop seed-steps/s':>17} {'ratio':>6} {'run GFLOP/s':>12} {'pop GFLOP/s':>12} {'gemm GFLOP/s':>13}")
    for threads in args.threads:
        gemm = gemm_rate(rows * length, model.config.hidden_size, model.config.vocab_size, threads) / 1e9
        for size in args.sizes:
            m = measure(model, METHODS[args.method], size, threads, args.repeats, args.warmup)
            separate, together = 1.0 / m["single"], size / m["population"]
            print(f"{threads:>7} {size:>4} {1e3 * m['single']:>12.1f} {1e3 * m['population']:>12.1f} "
                  f"{separate:>18.2f} {together:>17.2f} {together / separate:>6.2f} "
                  f"{m['flops'] * separate / 1e9:>12.1f} {m['flops'] * together / 1e9:>12.1f} {gemm:>13.1f}",
                  flush=True)


if __name__ == "__main__":
    main()
