"""Peak activation memory and throughput: pipelined ZeroLock against GPipe and 1F1B.

For each method in {zerolock, gpipe, 1f1b} and K in --stages, --repeats pipelined runs (one
process per stage, same model, stages, micro-batches, batch, adapters and optimizer) with
``measure_memory``. Every stage reports its memory split (``pipeline/memory.py``):
weights, gradients and optimizer state accounted from tensor sizes; activations measured as
the peak of bytes autograd saves for backward while they are alive
(``torch.autograd.graph.saved_tensors_hooks``); communication buffers accounted (receive
buffers); ZeroLock's replay buffer (host memory) beside them; on CUDA also
``torch.cuda.max_memory_allocated`` (measured). Throughput is labelled tokens per second at
the last stage over the steps after the warm-up (meaningless on shared CPU cores).

Prints a table and ZeroLock's ratios next to the paper's claims (26.5% lower peak memory and
4.9% higher throughput than PipeDream-style 1F1B), and writes ``systems.json`` to --out::

    {"zerolock": {"2": {"peak_saved_bytes": [per stage], "tokens_per_s": x,
                        "memory": [[{"weights": b, ..., "total": b} per stage] per repeat], ...},
                  "4": ...},
     "gpipe": {...}, "1f1b": {...}, "setup": {...}}

which ``analyses/systems/memory.py`` reads. Usage::

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
from zerolock_theory.app.workflows.systems import METHODS  # noqa: E402


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
    p.add_argument("--device", default="auto", help="auto (cuda when present), cpu, cuda, ...")
    p.add_argument("--dtype", default="float32", help="parameter dtype (as zerolock train's --dtype)")
    p.add_argument("--autocast", default=None, choices=("bfloat16", "float16"), help="autocast dtype (GPU)")
    p.add_argument("--optim", default="adamw", choices=("adamw", "sgd"))
    p.add_argument("--repeats", type=int, default=3, help="runs per method and K (the spread)")
    return p.parse_args()


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


def print_split(systems: dict, stages: list[int]) -> None:
    """Per-stage memory split of the first repeat, MiB, and the spread of the totals."""
    mib = 2.0 ** 20
    parts = ("weights", "gradients", "optimizer", "activations", "communication", "total", "replay")
    print(f"\n{'method':<9} {'K':>2} {'stage':>5} " + " ".join(f"{p[:12]:>12}" for p in parts) + "  total spread")
    for method in METHODS:
        for K in stages:
            runs = systems[method][str(K)]["memory"]
            for s, split in enumerate(runs[0]):
                totals = [run[s]["total"] for run in runs]
                print(f"{method:<9} {K:>2} {s + 1:>5} " + " ".join(f"{split[p] / mib:12.2f}" for p in parts)
                      + f"  {(max(totals) - min(totals)) / mib:.3f}")


def main() -> None:
    from zerolock_theory.app.workflows.systems import MemorySettings, measure_memory

    args = parse_args()
    try:
        settings = MemorySettings(model=args.model, data=args.data, stages=tuple(args.stages),
                                  micro_batches=args.micro_batches, batch_size=args.batch_size, seq_len=args.seq_len,
                                  steps=args.steps, warmup=args.warmup, threads=args.threads, device=args.device, dtype=args.dtype,
                                  autocast=args.autocast,
                                  optim=args.optim, repeats=args.repeats)
    except ValueError as exc:
        print(f"pipeline_memory: error: {exc}", file=sys.stderr)
        sys.exit(2)
    path = measure_memory(settings, args.out)
    systems = json.loads(path.read_text())
    print_table(systems, args.stages)
    print_split(systems, args.stages)
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
