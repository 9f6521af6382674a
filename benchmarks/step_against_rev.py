"""Benchmark (not a test): each method's training step at a git revision against this tree's, one run.

``trainer_step.py --before REV`` swaps only the loss module; this script times the whole step of
another revision. It unpacks ``--rev`` (``git archive``) into a temporary directory and starts
one worker process per (tree, method): each imports ``zerolock_theory`` from its tree, builds
the run from the same config (same model, seed, batches) and waits. The driver then asks the
workers for one step at a time, alternating the order every repetition, so every tree's steps
share the machine's load; only one worker computes at any moment. Each method's median step
time per tree and their ratio are printed, with every worker's ``zerolock_theory`` path (the
proof that each tree's code ran).

Backprop is timed as each tree trains it: this tree's computes its own loss only
(``readout_every = 0``, as in ``trainer_step.py``), while a revision before the plain baseline
also computes every chunk's readout each step. The working tree's column is labelled "today".

    python3 benchmarks/step_against_rev.py --rev 873ba9e --model smollm2-135m --chunks 5 \\
        --seq-len 32 --batch-size 8 --repeats 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _worker(spec: dict) -> None:
    """One (tree, method): build the run, then one step per ``step`` line on stdin."""
    import torch

    import zerolock_theory
    from zerolock_theory.config import TrainConfig
    from zerolock_theory.training.loop import setup

    torch.set_num_threads(spec["threads"])
    cfg = TrainConfig.from_dict({
        "model": {"path": spec["model"], "chunks": spec["chunks"], "device": spec["device"]},
        "data": {"seq_len": spec["seq_len"], "batch_size": spec["batch_size"]},
        "method": {"name": spec["method"]},
        "run": {"steps": 10_000, "progress": False},
    })
    with tempfile.TemporaryDirectory(prefix="step-rev-") as scratch:
        run = setup(cfg, os.path.join(scratch, "run"))
        if hasattr(run.step_fn, "readout_every"):
            run.step_fn.readout_every = 0  # plain backprop where the tree has it
        run.chunked.train()
        print(json.dumps({"ready": str(Path(zerolock_theory.__file__).parent)}), flush=True)
        for step, line in enumerate(sys.stdin):
            if line.strip() != "step":
                break
            batch = {k: v.to(run.device) for k, v in run.stream.next_batch().items()}
            tic, cpu = time.perf_counter(), time.process_time()
            run.step_fn.train_step(batch, step)
            if run.device.type == "cuda":
                torch.cuda.synchronize()
            print(json.dumps({"wall": time.perf_counter() - tic, "cpu": time.process_time() - cpu}), flush=True)


def _tree(rev: str, into: Path) -> Path:
    """The package sources at ``rev``, unpacked under ``into``."""
    archive = into / "tree.tar"
    subprocess.run(["git", "archive", "--format=tar", "-o", str(archive), rev], cwd=ROOT, check=True)
    tree = into / "tree"
    with tarfile.open(archive) as tar:
        tar.extractall(tree, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))  # Python < 3.10.12
    return tree


def _start(tree: Path, spec: dict) -> tuple[subprocess.Popen, str]:
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": str(spec["threads"]),
           "PYTHONWARNINGS": "ignore::FutureWarning"}  # an old tree's transformers deprecation notes
    proc = subprocess.Popen([sys.executable, __file__, "--worker", json.dumps(spec)], cwd=tree, env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line:
        raise SystemExit(f"the worker for {spec['method']} in {tree} exited before it was ready")
    return proc, json.loads(line)["ready"]


def _step(proc: subprocess.Popen) -> dict:
    proc.stdin.write("step\n")
    proc.stdin.flush()
    line = proc.stdout.readline()
    if not line:
        raise SystemExit("a worker exited during a step")
    return json.loads(line)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--worker":
        _worker(json.loads(sys.argv[2]))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rev", default="873ba9e", help="the revision to compare with (default: issue 35's day)")
    parser.add_argument("--model", default="embedded")
    parser.add_argument("--chunks", type=int, default=4)
    parser.add_argument("--seq-len", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--methods", nargs="+", default=["zerolock", "backprop"])
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1, help="torch threads of each worker (one computes at a time)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    args = parser.parse_args()
    resolved = subprocess.run(["git", "rev-parse", "--short", args.rev], cwd=ROOT, capture_output=True, text=True)
    if resolved.returncode != 0:
        raise SystemExit(f"--rev {args.rev}: not a revision of this repository")
    rev = resolved.stdout.strip()
    with tempfile.TemporaryDirectory(prefix="step-against-rev-") as scratch:
        trees = {rev: _tree(rev, Path(scratch)), "today": ROOT}
        workers, paths = {}, {}
        for name, tree in trees.items():
            for method in args.methods:
                spec = {"model": args.model, "chunks": args.chunks, "seq_len": args.seq_len,
                        "batch_size": args.batch_size, "method": method, "threads": args.threads,
                        "device": args.device}
                workers[name, method], paths[name, method] = _start(tree, spec)
        times = {key: [] for key in workers}
        keys = list(workers)
        for i in range(args.warmup + args.repeats):
            for key in (keys if i % 2 == 0 else keys[::-1]):
                timed = _step(workers[key])
                if i >= args.warmup:
                    times[key].append(timed[args.clock])
        for proc in workers.values():
            proc.stdin.close()
            proc.wait()
    medians = {key: statistics.median(values) for key, values in times.items()}
    print(f"{args.model}, K = {args.chunks}, {args.batch_size} x {args.seq_len} tokens, {args.threads} thread(s), "
          f"{args.clock} clock, median of {args.repeats} interleaved steps (warm-up {args.warmup})")
    print(f"{'method':<10} {rev + ' s':>12} {'today s':>10} {'before / today':>15}")
    for method in args.methods:
        old, new = medians[rev, method], medians["today", method]
        print(f"{method:<10} {old:>12.4f} {new:>10.4f} {old / new:>15.3f}")
    if {"zerolock", "backprop"} <= set(args.methods):
        print(f"zerolock / backprop: {rev} {medians[rev, 'zerolock'] / medians[rev, 'backprop']:.3f}, "
              f"today {medians['today', 'zerolock'] / medians['today', 'backprop']:.3f}")
    for key, path in paths.items():
        print(f"  {key[0]:>8} {key[1]:<9} ran {path}")


if __name__ == "__main__":
    main()
