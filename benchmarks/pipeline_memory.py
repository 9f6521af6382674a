"""Peak activation memory and throughput: pipelined ZeroLock against GPipe and 1F1B.

For each method in {zerolock, gpipe, 1f1b} and K in --stages, one pipelined run (one process
per stage, same model, stages, micro-batches, adapters and optimizer) with
``measure_memory``: every stage counts the bytes autograd saves for backward while they are
alive (``torch.autograd.graph.saved_tensors_hooks``, weights excluded) and reports the peak;
on CUDA also ``torch.cuda.max_memory_allocated``. Throughput is labelled tokens per second at
the last stage over the steps after the warm-up.

Prints a table and ZeroLock's ratios next to the paper's claims (26.5% lower peak memory and
4.9% higher throughput than PipeDream-style 1F1B), and writes ``systems.json`` to --out::

    {"zerolock": {"2": {"peak_saved_bytes": [per stage], "tokens_per_s": x, ...}, "4": ...},
     "gpipe": {...}, "1f1b": {...}, "setup": {...}}

which ``analyses/systems.py`` reads. Usage::

    python3 benchmarks/pipeline_memory.py --out runs/systems
    python3 benchmarks/pipeline_memory.py --out runs/systems --model /models/qwen --device cuda
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

try:
    import zerolock_theory  # noqa: F401
except ModuleNotFoundError:  # run from a checkout without ``pip install -e .``
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CLAIMED_MEMORY_REDUCTION = 0.265
CLAIMED_THROUGHPUT_GAIN = 0.049
METHODS = ("zerolock", "gpipe", "1f1b")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, required=True, help="directory for systems.json and the runs")
    p.add_argument("--model", default="embedded", help="'embedded' or a local model directory")
    p.add_argument("--data", default="embedded", help="data source (see DataConfig.source)")
    p.add_argument("--stages", type=int, nargs="+", default=[2, 4])
    p.add_argument("--micro-batches", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--warmup", type=int, default=2, help="steps left out of the timing")
    p.add_argument("--threads", type=int, default=1, help="CPU threads per stage process")
    p.add_argument("--device", default="cpu")
    return p.parse_args()


def run_one(args: argparse.Namespace, model: str, method: str, K: int) -> dict:
    """One pipelined run with memory measurement; returns its systems.json entry."""
    from zerolock_theory.config import TrainConfig
    from zerolock_theory.pipeline import PipelineOptions, launch

    config = TrainConfig.from_dict({
        "model": {"path": model, "chunks": K, "device": args.device},
        "data": {"source": args.data, "seq_len": args.seq_len, "batch_size": args.batch_size,
                 "eval_batches": 1},
        "method": {"name": "zerolock" if method == "zerolock" else "backprop"},
        "optim": {"name": "sgd", "lr": 0.01},
        "run": {"steps": args.steps, "checkpoint_every": args.steps, "eval_every": 10_000, "progress": False},
    })
    options = PipelineOptions(schedule=method, micro_batches=args.micro_batches, threads=args.threads,
                              measure_memory=True, warmup_steps=args.warmup, max_restarts=0)
    summary = launch(config, options, args.out / "runs" / f"{method}_K{K}", overwrite=True)
    results = sorted(summary.results, key=lambda r: r["stage"])
    return {
        "peak_saved_bytes": [int(r["peak_saved_bytes"]) for r in results],
        "tokens_per_s": float(results[-1]["tokens_per_s"]),
        "cuda_max_memory_allocated": [r.get("cuda_max_memory_allocated") for r in results],
        "micro_batches": args.micro_batches,
        "bytes_sent_per_step": [int(r.get("bytes_sent", 0) / args.steps) for r in results],
    }


def print_table(systems: dict, stages: list[int]) -> None:
    mib = 2.0 ** 20
    print(f"\n{'method':<9} {'K':>2}  {'peak saved-for-backward MiB per stage':<40} {'max MiB':>8} {'tokens/s':>9}")
    for method in METHODS:
        for K in stages:
            e = systems[method][str(K)]
            per = " ".join(f"{b / mib:6.2f}" for b in e["peak_saved_bytes"])
            print(f"{method:<9} {K:>2}  {per:<40} {max(e['peak_saved_bytes']) / mib:8.2f} {e['tokens_per_s']:9.0f}")
    print(f"\nZeroLock vs baseline (peak = max over stages)   paper vs 1F1B: memory -{CLAIMED_MEMORY_REDUCTION:.1%},"
          f" throughput +{CLAIMED_THROUGHPUT_GAIN:.1%}")
    for K in stages:
        zl = systems["zerolock"][str(K)]
        for base in ("1f1b", "gpipe"):
            b = systems[base][str(K)]
            mem = 1 - max(zl["peak_saved_bytes"]) / max(b["peak_saved_bytes"])
            tps = zl["tokens_per_s"] / b["tokens_per_s"] - 1
            print(f"  K={K} vs {base:<5}: peak memory {-mem:+.1%} (ours)   throughput {tps:+.1%} (ours)")


def main() -> None:
    args = parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    model = args.model
    systems: dict = {m: {} for m in METHODS}
    for K in args.stages:
        for method in METHODS:
            systems[method][str(K)] = run_one(args, model, method, K)
            print(f"{method} K={K}: {systems[method][str(K)]}", flush=True)
    systems["setup"] = {"model": model, "batch_size": args.batch_size, "seq_len": args.seq_len,
                        "micro_batches": args.micro_batches, "steps": args.steps, "warmup": args.warmup,
                        "threads_per_stage": args.threads, "device": args.device}
    (args.out / "systems.json").write_text(json.dumps(systems, indent=1))
    print_table(systems, args.stages)
    print(f"\nwrote {args.out / 'systems.json'}")


if __name__ == "__main__":
    main()
